package hub

import (
	"context"
	"sort"
	"time"
)

// Starting from a time (Request.SinceTime, docs/protocol.md "Starting from
// a time"): the stream starts at the first retained commit whose event time
// is at or after the time, as a replay from the cursor just below it would,
// or — when commits at or after the time may have left what is retained —
// is answered as a cursor below the window is.
//
// Event times are non-decreasing in seq order in the memory store: the hub
// stamps every event under its lock and never stamps one earlier than the
// event before it (nowLocked), even when the wall clock steps back. The
// ring is then searched by binary search. With a Log, commits are stamped
// by the replica that published them, just before the Log orders them:
// commits from different replicas may be out of time order by their
// clocks' difference and the append's latency, and the search finds a
// boundary among them (the stream is in seq order from there).

// nowLocked is the time to stamp the next event with: now, or the time of
// the newest event when the wall clock has stepped back behind it, so that
// event times never decrease along the ring. The caller holds mu.
func (h *Hub) nowLocked() time.Time {
	now := time.Now()
	if ev := h.ring.get(h.ring.head); ev != nil && now.Round(0).Before(ev.Time.Round(0)) {
		return ev.Time
	}
	return now
}

// seqAtTime is the seq a stream starting at t begins with: the first
// commit (or, in memory, server status) whose event time is at or after t,
// head+1 when there is none. It returns ErrTooOld when events at or after t
// may have left what is retained.
func (h *Hub) seqAtTime(ctx context.Context, t time.Time) (uint64, error) {
	return h.backend.seqAtTime(ctx, t)
}

// seqAtTime finds, by binary search, the first seq the ring holds whose
// event time is at or after t (head+1 when none is). ok is false when the
// answer may lie before the ring. With the ring as the whole log (memory),
// that is when an event that left the ring was at or after t (or nothing
// left it: then the ring holds everything since seq 1). With a Log, it is
// when the ring's oldest commit is at or after t: the Log is asked.
func (r *ring) seqAtTime(t time.Time, whole bool) (seq uint64, ok bool) {
	oldest := r.low
	if whole {
		if oldest > 1 && !r.evicted.lastAt.Before(t) {
			return 0, false
		}
	} else {
		// Holes (seqs the Log skipped) carry no time of their own.
		for oldest <= r.head && r.get(oldest).resp == nil {
			oldest++
		}
		if oldest > r.head || !r.get(oldest).Time.Before(t) {
			return 0, false
		}
	}
	n := int(r.head - oldest + 1)
	i := sort.Search(n, func(i int) bool {
		return !r.get(oldest + uint64(i)).Time.Before(t)
	})
	return oldest + uint64(i), true
}
