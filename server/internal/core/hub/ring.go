package hub

import (
	"sync/atomic"
	"time"
)

// ring holds the last positioned events, addressed by seq, bounded both by
// count (len(slots)) and by bytes (maxBytes).
//
// Invariants (the indexes only grow):
//   - head is the highest seq stored; 0 means nothing was ever stored.
//   - the stored seqs are exactly [low, head], and event seq lives in
//     slots[seq % len(slots)]; an empty ring has low = head+1, so
//     oldest()-1 == head and "resume after head" is servable. low is 1
//     unless the ring started (or restarted, see skipTo) after a given seq.
//   - head-low+1 <= len(slots), and the bytes held (bytes.Load(): each
//     event's cost plus the encodings cached on it, see Event.Cache) stay
//     within maxBytes after every push, except that the newest event is
//     always kept: one event larger than the budget is the whole ring.
//
// ring does no locking: Hub.mu guards it. bytes is atomic because cached
// encodings are added to it by streams outside the lock.
type ring struct {
	slots    []*Event
	low      uint64
	head     uint64
	maxBytes int64
	bytes    atomic.Int64
	// evicted indexes the topics of the events that have left the ring.
	evicted evictedTopics
}

func newRing(capacity int, maxBytes int64) *ring {
	return newRingAfter(capacity, maxBytes, 0)
}

// newRingAfter is an empty ring whose first event will carry seq head+1.
func newRingAfter(capacity int, maxBytes int64, head uint64) *ring {
	return &ring{slots: make([]*Event, capacity), low: head + 1, head: head, maxBytes: maxBytes}
}

func (r *ring) capacity() uint64 { return uint64(len(r.slots)) }

// oldest is the lowest seq still stored (head+1 when the ring is empty).
func (r *ring) oldest() uint64 { return r.low }

// push stores ev, which must carry seq head+1, then evicts the oldest
// events while the count or the bytes exceed their bound.
func (r *ring) push(ev *Event) {
	if ev.Seq != r.head+1 {
		panic("hub: ring push out of order") // a bug in Hub, never input
	}
	ev.budget = &r.bytes
	ev.cap = r.maxBytes
	r.bytes.Add(ev.cost)
	if r.head-r.low+1 == r.capacity() {
		r.evictOldest()
	}
	r.slots[ev.Seq%r.capacity()] = ev
	r.head = ev.Seq
	for r.bytes.Load() > r.maxBytes && r.low < r.head {
		r.evictOldest()
	}
}

func (r *ring) evictOldest() {
	i := r.low % r.capacity()
	r.evicted.note(r.slots[i])
	r.slots[i].evict()
	r.slots[i] = nil
	r.low++
}

// get returns the event at seq, or nil when seq is outside [oldest, head].
func (r *ring) get(seq uint64) *Event {
	if seq == 0 || seq > r.head || seq < r.low {
		return nil
	}
	return r.slots[seq%r.capacity()]
}

// appendRange appends the stored events with seq in [from, to] to dst,
// stopping before the events appended would cost more than maxBytes (the
// first is always appended). The caller has checked from >= oldest() and
// to <= head.
func (r *ring) appendRange(dst []*Event, from, to uint64, maxBytes BatchBytes) []*Event {
	var n int64
	for seq := from; seq <= to; seq++ {
		ev := r.slots[seq%r.capacity()]
		if n += ev.cost; maxBytes.Over(n) && seq > from {
			break
		}
		dst = append(dst, ev)
	}
	return dst
}

// skipTo makes head = seq for a log whose seqs jump (deleted messages): the
// skipped seqs hold holes — events with no response, which every stream
// covers without sending — or, past a whole ring's worth, the ring restarts
// empty after seq.
func (r *ring) skipTo(seq uint64) {
	if seq <= r.head {
		return
	}
	if seq-r.head >= r.capacity() {
		for r.low <= r.head {
			r.evictOldest()
		}
		r.head, r.low = seq, seq+1
		return
	}
	var at time.Time
	if ev := r.get(r.head); ev != nil {
		at = ev.Time
	}
	for s := r.head + 1; s <= seq; s++ {
		r.push(&Event{Seq: s, Time: at})
	}
}
