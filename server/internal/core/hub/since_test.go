package hub

import (
	"fmt"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestRingSeqAtTimeMatchesAReferenceScan: against rings of event times
// with runs of equal times, across eviction, the binary search finds what
// a scan of everything appended finds — the first seq with time >= t — and
// refuses exactly when an event that left the ring was at or after t
// (memory), or when the ring's oldest commit is (with a Log).
func TestRingSeqAtTimeMatchesAReferenceScan(t *testing.T) {
	secs := []int64{1, 1, 2, 2, 2, 3, 5, 5, 5, 5, 6, 8, 8, 9}
	for _, capacity := range []int{1, 3, 4, 16} {
		r := newRing(capacity, 1<<40)
		for i, s := range secs {
			seq := uint64(i + 1)
			r.push(newCommitEvent(1, seq, time.Unix(s, 0), []*ringcastv1.Fact{{Topic: "t", Type: "x"}}, ""))
			for q := int64(0); q <= 10; q++ {
				at := time.Unix(q, 0)
				// The reference: the first seq appended with time >= at.
				want := seq + 1
				for j := range seq {
					if secs[j] >= q {
						want = j + 1
						break
					}
				}
				evictedAt := r.low > 1 && secs[r.low-2] >= q // the newest evicted
				name := fmt.Sprintf("cap %d, %d appended, t=%d", capacity, seq, q)
				got, ok := r.seqAtTime(at, true)
				switch {
				case evictedAt && ok:
					t.Fatalf("%s (memory): served from %d, want refused (an evicted event is at or after t)", name, got)
				case !evictedAt && (!ok || got != want):
					t.Fatalf("%s (memory): %d %v, want %d", name, got, ok, want)
				}
				oldestAt := secs[r.low-1] >= q
				got, ok = r.seqAtTime(at, false)
				switch {
				case oldestAt && ok:
					t.Fatalf("%s (log): served from %d, want the Log asked (the ring's oldest is at or after t)", name, got)
				case !oldestAt && (!ok || got != want):
					t.Fatalf("%s (log): %d %v, want %d", name, got, ok, want)
				}
			}
		}
	}
}
