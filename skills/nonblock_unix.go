//go:build unix

package skills

import "syscall"

// oNonblock makes an open return at once where it would wait (a named
// pipe with no writer).
const oNonblock = syscall.O_NONBLOCK
