package hub

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestRingMatchesReferenceSliceAcrossWrapAround appends far past the
// capacity and, after every append, checks the ring against a reference
// slice of everything appended: same bounds, same events, nil outside.
func TestRingMatchesReferenceSliceAcrossWrapAround(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 7, 64} {
		r := newRing(capacity, 1<<40)
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
			got := r.appendRange(nil, from, seq, math.MaxInt64)
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
	r := newRing(4, 1<<40)
	r.push(&Event{Seq: 3})
}

// sizedEvent is a commit event of about n bytes.
func sizedEvent(seq uint64, n int) *Event {
	f := &ringcastv1.Fact{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_BinaryData{BinaryData: make([]byte, n)}}
	return newCommitEvent(1, seq, time.Unix(int64(seq), 0), []*ringcastv1.Fact{f}, "")
}

// TestRingDropsOldestWhenBytesExceedTheBound: the ring holds fewer than
// its count when its bytes would exceed the bound, always keeps the newest
// event, and its byte count is exactly the sum of what it holds.
func TestRingDropsOldestWhenBytesExceedTheBound(t *testing.T) {
	r := newRing(100, 12_000)
	for seq := uint64(1); seq <= 50; seq++ {
		r.push(sizedEvent(seq, 900+int(seq%7)*100))
		var sum int64
		for s := r.oldest(); s <= r.head; s++ {
			sum += r.get(s).Cost()
		}
		if got := r.bytes.Load(); got != sum || got > 12_000 {
			t.Fatalf("after %d: bytes %d, held events sum to %d, bound 12000", seq, got, sum)
		}
	}
	if n := r.head - r.oldest() + 1; n < 6 || n > 11 {
		t.Fatalf("holds %d events of ~1.5 KB under a 12 KB bound", n)
	}
	r.push(sizedEvent(51, 50_000)) // larger than the bound: kept alone
	if r.oldest() != 51 || r.head != 51 {
		t.Fatalf("after an event over the bound: [%d, %d], want [51, 51]", r.oldest(), r.head)
	}
}

// TestCachedEncodingsCountAgainstTheRingBudget: an encoding is cached only
// while it fits the ring's bound, counts in the ring's bytes, and leaves
// them when the ring drops the event; a dropped event caches nothing.
// TestCachedEncodingKeepsLittleSpareRoom: the budget counts an encoding's
// length, so one built in a buffer much larger than it is kept as a copy
// of its length; one that nearly fills its buffer is kept as it is.
func TestCachedEncodingKeepsLittleSpareRoom(t *testing.T) {
	r := newRing(100, 1<<20)
	ev := sizedEvent(1, 100)
	r.push(ev)
	for _, tc := range []struct {
		slot     Slot
		len, cap int
		wantCap  int
	}{
		{testSlots[0], 1000, 4000, 1000}, // 4× its length: copied
		{testSlots[1], 1000, 1314, 1314}, // a quarter and 64 bytes more: kept
		{testSlots[2], 10, 74, 74},       // small: 64 bytes spare are kept
	} {
		b := ev.Cache(tc.slot, make([]byte, tc.len, tc.cap))
		if len(b) != tc.len || cap(b) != tc.wantCap {
			t.Errorf("encoding of %d bytes in a buffer of %d: kept with capacity %d, want %d", tc.len, tc.cap, cap(b), tc.wantCap)
		}
		if kept := ev.encoded[tc.slot].Load(); kept == nil || cap(*kept) != tc.wantCap {
			t.Errorf("encoding of %d bytes in a buffer of %d: not cached as returned", tc.len, tc.cap)
		}
	}
}

func TestCachedEncodingsCountAgainstTheRingBudget(t *testing.T) {
	r := newRing(100, 5_000)
	ev := sizedEvent(1, 1000)
	r.push(ev)
	base := r.bytes.Load()
	proto, json, sse := testSlots[0], testSlots[1], testSlots[2]
	if b := ev.Cache(proto, make([]byte, 1500)); len(b) != 1500 || r.bytes.Load() != base+1500 {
		t.Fatalf("cached 1500 bytes: ring bytes %d, want %d", r.bytes.Load(), base+1500)
	}
	if b := ev.Cache(json, make([]byte, 4000)); len(b) != 4000 || ev.encoded[json].Load() != nil || r.bytes.Load() != base+1500 {
		t.Fatalf("an encoding over the bound was cached (ring bytes %d)", r.bytes.Load())
	}
	for seq := uint64(2); seq <= 5; seq++ {
		r.push(sizedEvent(seq, 1000))
	}
	if r.oldest() == 1 {
		t.Fatal("the event with a cached encoding was not dropped first")
	}
	var sum int64
	for s := r.oldest(); s <= r.head; s++ {
		sum += r.get(s).Cost()
	}
	if r.bytes.Load() != sum {
		t.Fatalf("after dropping it: ring bytes %d, want %d", r.bytes.Load(), sum)
	}
	if _ = ev.Cache(sse, make([]byte, 10)); ev.encoded[sse].Load() != nil || ev.encoded[proto].Load() != nil {
		t.Fatal("a dropped event keeps or caches encodings")
	}
}

// TestAppendRangeStopsAtItsBytes: a batch taken out of the ring stops
// before its events' cost would pass the bound, and an event larger than
// the bound is a batch of its own.
func TestAppendRangeStopsAtItsBytes(t *testing.T) {
	r := newRing(100, 1<<30)
	for seq := uint64(1); seq <= 20; seq++ {
		n := 1000
		if seq == 10 {
			n = 50_000
		}
		r.push(sizedEvent(seq, n))
	}
	one := r.get(1).Cost()
	var prev uint64
	for from := uint64(1); from <= 20; from = prev + 1 {
		got := r.appendRange(nil, from, 20, BatchBytes(5*one))
		var sum int64
		for _, ev := range got {
			sum += ev.Cost()
		}
		prev = got[len(got)-1].Seq
		switch {
		case from == 10 && len(got) != 1:
			t.Fatalf("from 10: %d events, want the large one alone", len(got))
		case len(got) > 1 && sum > 5*one:
			t.Fatalf("from %d: %d events of %d bytes, over the bound %d", from, len(got), sum, 5*one)
		case len(got) < 5 && prev != 9 && prev != 10 && prev != 20:
			t.Fatalf("from %d: %d events, stopped early at %d", from, len(got), prev)
		}
	}
}

// TestEncodingSlotsFollowTheFacesRegistered: events have a place for every
// slot claimed, however many faces claim them (more than a commit event
// holds inline included), and a slot claimed after an event was made is
// only never cached on that event: no panic, no lost send.
func TestEncodingSlotsFollowTheFacesRegistered(t *testing.T) {
	early := sizedEvent(1, 10)
	var extra []Slot
	for range inlineSlots + 1 {
		extra = append(extra, NewSlot())
	}
	late := extra[len(extra)-1]
	if b := early.Cache(late, []byte("x")); string(b) != "x" || early.Cached(late) != nil {
		t.Fatalf("an event made before its slot was claimed: Cache = %q, Cached = %q; want the bytes back, nothing kept", b, early.Cached(late))
	}
	r := newRing(10, 1<<20)
	for _, ev := range []*Event{sizedEvent(1, 10), newStatusEvent(1, 2, time.Unix(2, 0), &ringcastv1.ServerStatus{})} {
		seq := ev.Seq
		r.push(ev)
		if len(ev.encoded) != int(claimedSlots.Load()) {
			t.Fatalf("event %d has %d encoding places, want one per claimed slot (%d)", seq, len(ev.encoded), claimedSlots.Load())
		}
		for i, s := range append(testSlots[:], extra...) {
			want := []byte{byte(i)}
			if ev.Cache(s, want); string(ev.Cached(s)) != string(want) {
				t.Fatalf("event %d, slot %d: cached %q, want %q", seq, s, ev.Cached(s), want)
			}
		}
	}
}

// TestBatchBytes: a batch is past the bound only beyond it; an encoding as
// large as the bound is a write of its own.
func TestBatchBytes(t *testing.T) {
	b := MaxBatchBytes
	if b.Over(int64(b)) || !b.Over(int64(b)+1) {
		t.Error("Over: a batch of exactly the bound is within it, one byte more is past it")
	}
	if !b.Alone(int(b)) || b.Alone(int(b)-1) {
		t.Error("Alone: an encoding as large as the bound is written alone, a smaller one is buffered")
	}
}
