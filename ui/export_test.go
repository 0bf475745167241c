package ui

import "time"

// SetMarkDelay holds every mark back by d (tests only).
func SetMarkDelay(d time.Duration) { markDelay = d }
