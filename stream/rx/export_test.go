package rx

import "github.com/toolstream/toolstream/events"

// ModelVisibleTypes are what a model sees of a call, as a Filter's Types:
// its deltas and results.
var ModelVisibleTypes = []events.Type{events.TypeDelta, events.TypeResult}
