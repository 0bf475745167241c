package skills

// DefaultResourceLimit is defaultResourceLimit (tests only).
const DefaultResourceLimit = defaultResourceLimit

// MaxPathBytes is maxPathBytes (tests only).
const MaxPathBytes = maxPathBytes
