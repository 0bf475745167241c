package main

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// lineWatcher keeps what a process writes and tells when a line with a
// given text appears.
type lineWatcher struct {
	mu    sync.Mutex
	text  strings.Builder
	waits []lineWait
}

type lineWait struct {
	sub string
	ch  chan struct{}
}

func (w *lineWatcher) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		w.mu.Lock()
		w.text.WriteString(sc.Text() + "\n")
		kept := w.waits[:0]
		for _, wt := range w.waits {
			if strings.Contains(sc.Text(), wt.sub) {
				close(wt.ch)
			} else {
				kept = append(kept, wt)
			}
		}
		w.waits = kept
		w.mu.Unlock()
	}
}

func (w *lineWatcher) when(sub string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(w.text.String(), sub) {
		close(ch)
		return ch
	}
	w.waits = append(w.waits, lineWait{sub, ch})
	return ch
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}
