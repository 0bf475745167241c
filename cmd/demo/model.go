package main

import (
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// Turn is a model turn as the demo shows it: words, tool calls, and for
// the scripted model what the turn is meant to show.
type Turn struct {
	Text  string
	Calls []toolkit.Call
	// StopAfter, when positive, stands for the person watching who presses
	// stop: the demo cancels the turn's calls after this long. Only the
	// scripted model sets it.
	StopAfter time.Duration
	// Note says, for the demo's output, what the turn is meant to show.
	Note string
}

// annotated is implemented by a model that says what its turn number n
// (from 1) is meant to show: the scripted model.
type annotated interface {
	turnInfo(n int) (note string, stopAfter time.Duration)
}
