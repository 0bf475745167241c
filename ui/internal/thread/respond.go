package thread

import (
	"time"

	"github.com/toolstream/toolstream/ui/internal/frames"
)

// WriteTimeout is how long each write of a response to a client may wait
// (WithWriteTimeout; 0: no bound): the UI protocol handlers write their
// frames with it.
func (h *Host) WriteTimeout() time.Duration { return h.writeTimeout }

// defaultWriteTimeout is the write timeout of a host without
// WithWriteTimeout, 30 s (shorter in tests).
func defaultWriteTimeout() time.Duration { return frames.DefaultTimeout }
