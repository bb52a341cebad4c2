package hub

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRingMatchesReferenceSliceAcrossWrapAround appends far past the
// capacity and, after every append, checks the ring against a reference
// slice of everything appended: same bounds, same events, nil outside.
func TestRingMatchesReferenceSliceAcrossWrapAround(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 7, 64} {
		r := newRing(capacity)
		var ref []*Event
		if r.oldest() != 1 || r.head != 0 || r.get(1) != nil {
			t.Fatalf("cap %d: empty ring has oldest %d head %d", capacity, r.oldest(), r.head)
		}
		for seq := uint64(1); seq <= uint64(5*capacity+3); seq++ {
			ev := &Event{Seq: seq, Time: time.Unix(int64(seq), 0)}
			r.push(ev)
			ref = append(ref, ev)
			wantOldest := uint64(1)
			if len(ref) > capacity {
				wantOldest = uint64(len(ref) - capacity + 1)
			}
			if r.head != seq || r.oldest() != wantOldest {
				t.Fatalf("cap %d after %d: bounds [%d, %d], want [%d, %d]", capacity, seq, r.oldest(), r.head, wantOldest, seq)
			}
			for s := uint64(0); s <= seq+1; s++ {
				got := r.get(s)
				var want *Event
				if s >= wantOldest && s <= seq {
					want = ref[s-1]
				}
				if got != want {
					t.Fatalf("cap %d after %d: get(%d) = %v, want %v", capacity, seq, s, got, want)
				}
			}
			from := wantOldest + uint64(rand.IntN(int(seq-wantOldest+1)))
			got := r.appendRange(nil, from, seq)
			for i, ev := range got {
				if ev != ref[from-1+uint64(i)] {
					t.Fatalf("cap %d: appendRange(%d, %d)[%d] = seq %d", capacity, from, seq, i, ev.Seq)
				}
			}
		}
	}
}

func TestRingRejectsOutOfOrderPush(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("push of seq 3 onto an empty ring did not panic")
		}
	}()
	r := newRing(4)
	r.push(&Event{Seq: 3})
}
