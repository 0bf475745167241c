package interceptors

import (
	"context"
	"time"

	"github.com/toolstream/toolstream/toolkit"
)

// RetrySleep replaces how Retry waits between attempts.
func RetrySleep(f func(ctx context.Context, d time.Duration) error) RetryOption { return retrySleep(f) }

// EvictFileName is the name under which Evict stores a result.
func EvictFileName(tool string, ids ...string) string { return evictFileName(tool, ids...) }

// LoopGuardAt is LoopGuard measuring its window with the clock now.
func LoopGuardAt(n int, window time.Duration, now func() time.Time) toolkit.Interceptor {
	return loopGuard(n, window, now)
}

// Defaults the tests check against, unexported in the package (each
// option's godoc gives its default).
const (
	DefaultAuditMaxBytes       = defaultAuditMaxBytes
	DefaultEvictHint           = defaultEvictHint
	DefaultSanitizePlaceholder = defaultSanitizePlaceholder
)

// The causes the tests take apart; users match ErrLimit, and read the
// attempts in Result.Meta.
type (
	LimitError = limitError
	RetryError = retryError
)
