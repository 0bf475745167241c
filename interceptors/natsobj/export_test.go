package natsobj

import "time"

// SetHold sets how long a stored object is safe from the purge that makes
// room; the returned func puts back the value before.
func SetHold(d time.Duration) (restore func()) {
	old := hold
	hold = d
	return func() { hold = old }
}
