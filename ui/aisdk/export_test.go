package aisdk

import (
	"net/http"

	sse "github.com/toolstream/toolstream/ui/internal/frames"
)

// SetMaxWire bounds request bodies at n bytes instead of wireLimit (tests
// only; 0 resets it).
func SetMaxWire(n int64) {
	if n == 0 {
		n = wireLimit
	}
	maxWire = n
}

// newWriter writes frames to w with the default write timeout (tests
// only: the handlers write with their host's, Host.WriteTimeout).
func newWriter(w http.ResponseWriter) *writer { return &writer{sse.New(w, sse.DefaultTimeout)} }

// MaxBody bounds what the handler keeps of a request (tests only).
const MaxBody = maxBody

// The data parts' names (tests only).
const (
	DataSkills  = dataSkills
	DataGroups  = dataGroups
	DataAnswers = dataAnswers
)
