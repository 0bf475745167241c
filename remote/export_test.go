package remote

import "time"

// LostAfter is how long a call of c waits without a word from its worker
// before it fails with *LostError.
func LostAfter(c *Client) time.Duration { return c.lostAfter() }
