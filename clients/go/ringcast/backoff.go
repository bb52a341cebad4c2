package ringcast

import (
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with full jitter: the n-th
// consecutive retry waits a uniformly random duration in [Min, min(Max,
// Initial·2ⁿ)]. A stream that moved the cursor (delivered a new position)
// or lived for Reset is healthy: the next retry starts over at n = 0. Every
// reconnect waits, healthy or not, so even a server that ends every stream
// at once cannot drive a zero-delay loop: Min is raised to 1ms if unset.
type Backoff struct {
	Min     time.Duration
	Initial time.Duration
	Max     time.Duration
	Reset   time.Duration
}

// DefaultBackoff waits 100ms..250ms at first, doubling up to 30s, and
// resets after a stream that lived 30s: the values both clients take from
// clients/conformance/defaults.json.
var DefaultBackoff = Backoff{Min: defaultBackoffMin, Initial: defaultBackoffInitial, Max: defaultBackoffMax, Reset: defaultBackoffReset}

// Delay is the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	ceil := b.Initial
	for i := 0; i < attempt && ceil < b.Max; i++ {
		if ceil > b.Max/2 {
			ceil = b.Max // doubling would pass the cap (or overflow)
			break
		}
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

// normalized fills unset or inconsistent fields so that Delay is never zero
// and Reset is meaningful.
func (b Backoff) normalized() Backoff {
	if b.Min <= 0 {
		b.Min = time.Millisecond
	}
	if b.Initial < b.Min {
		b.Initial = b.Min
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Reset <= 0 {
		b.Reset = DefaultBackoff.Reset
	}
	return b
}
