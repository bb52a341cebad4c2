package ringcast_test

import (
	"math"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

// TestBackoffIsCappedJitteredAndNeverZero checks the delay bounds for
// many attempts, including caps near the largest Duration (doubling must
// not overflow into short delays).
func TestBackoffIsCappedJitteredAndNeverZero(t *testing.T) {
	for _, b := range []ringcast.Backoff{
		ringcast.DefaultBackoff,
		{Min: time.Millisecond, Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond},
		{Min: time.Second, Initial: time.Hour, Max: math.MaxInt64},
	} {
		for attempt := range 200 {
			ceil := b.Initial
			for range attempt {
				if ceil >= b.Max/2 {
					ceil = b.Max
					break
				}
				ceil *= 2
			}
			longest := time.Duration(0)
			for range 20 {
				d := b.Delay(attempt)
				if d < b.Min || d > max(min(ceil, b.Max), b.Min) {
					t.Fatalf("%+v attempt %d: delay %v outside [%v, %v]", b, attempt, d, b.Min, min(ceil, b.Max))
				}
				longest = max(longest, d)
			}
			if ceil >= 4*b.Min && longest == b.Min {
				t.Fatalf("%+v attempt %d: 20 delays all %v, the floor: the backoff collapsed", b, attempt, b.Min)
			}
		}
	}
}
