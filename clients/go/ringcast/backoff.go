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
// at once cannot drive a zero-delay loop.
//
// WithBackoff settles the bounds as the TypeScript client does
// (clients/conformance/backoff.json holds the cases both clients check): a
// field that is zero or negative takes its default (DefaultBackoff's
// values: 100ms, 250ms, 30s, 30s); Min, Initial and Max below 1ms count as
// 1ms; Max caps Min and Initial, so no delay ever exceeds it; Min raises
// Initial. So Backoff{Max: 80 * time.Millisecond} waits 80ms every time,
// and Backoff{Min: time.Second} waits 1s at first.
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

// WithBackoff replaces DefaultBackoff (for subscriptions and Commit's
// retries); its bounds are settled as the Backoff doc says.
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// normalized settles the bounds as the Backoff doc says, so that
// 1ms <= Min <= Initial <= Max and Reset > 0.
func (b Backoff) normalized() Backoff {
	if b.Min <= 0 {
		b.Min = defaultBackoffMin
	}
	if b.Initial <= 0 {
		b.Initial = defaultBackoffInitial
	}
	if b.Max <= 0 {
		b.Max = defaultBackoffMax
	}
	if b.Reset <= 0 {
		b.Reset = defaultBackoffReset
	}
	b.Max = max(b.Max, time.Millisecond)
	b.Min = min(max(b.Min, time.Millisecond), b.Max)
	b.Initial = min(max(b.Initial, b.Min), b.Max)
	return b
}
