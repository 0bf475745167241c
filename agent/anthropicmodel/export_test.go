package anthropicmodel

// DefaultMaxTokens is defaultMaxTokens (tests only).
const DefaultMaxTokens = defaultMaxTokens
