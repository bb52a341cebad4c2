package ringcast

import (
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with full jitter: the n-th
// consecutive retry waits a uniformly random duration in [Min, min(Max,
// Initial·2ⁿ)]. A stream that stayed healthy for Reset starts over at n = 0.
// Min > 0 keeps even a server that ends every stream at once from driving a
// zero-delay reconnect loop.
type Backoff struct {
	Min     time.Duration
	Initial time.Duration
	Max     time.Duration
	Reset   time.Duration
}

// DefaultBackoff waits 50ms..250ms at first, doubling up to 30s, and resets
// after a stream that lived 30s.
var DefaultBackoff = Backoff{Min: 50 * time.Millisecond, Initial: 250 * time.Millisecond, Max: 30 * time.Second, Reset: 30 * time.Second}

// Delay is the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	ceil := b.Initial
	for i := 0; i < attempt && ceil < b.Max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.Max)
	if ceil <= b.Min {
		return b.Min
	}
	return b.Min + rand.N(ceil-b.Min+1)
}

// WithBackoff replaces DefaultBackoff.
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }
