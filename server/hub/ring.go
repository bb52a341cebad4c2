package hub

import "time"

// ring holds the last len(slots) positioned events, addressed by seq.
//
// Invariants (the indexes only grow):
//   - head is the highest seq stored; 0 means nothing was ever stored.
//   - the stored seqs are exactly [oldest(), head], and event seq lives in
//     slots[seq % len(slots)].
//   - oldest() = max(base, head-len(slots)+1); an empty ring has
//     oldest() = base = head+1, so oldest()-1 == head and "resume after
//     head" is servable. base is 1 unless the ring started (or restarted,
//     see skipTo) after a given seq.
//
// ring does no locking: Hub.mu guards it.
type ring struct {
	slots []*Event
	head  uint64
	base  uint64
}

func newRing(capacity int) ring {
	return ring{slots: make([]*Event, capacity), base: 1}
}

// newRingAfter is an empty ring whose first event will carry seq head+1.
func newRingAfter(capacity int, head uint64) ring {
	return ring{slots: make([]*Event, capacity), head: head, base: head + 1}
}

func (r *ring) capacity() uint64 { return uint64(len(r.slots)) }

// oldest is the lowest seq still stored (head+1 when the ring is empty).
func (r *ring) oldest() uint64 {
	if r.head < r.capacity() || r.head-r.capacity()+1 < r.base {
		return r.base
	}
	return r.head - r.capacity() + 1
}

// push stores ev, which must carry seq head+1, evicting the oldest event
// when the ring is full.
func (r *ring) push(ev *Event) {
	if ev.Seq != r.head+1 {
		panic("hub: ring push out of order") // a bug in Hub, never input
	}
	r.slots[ev.Seq%r.capacity()] = ev
	r.head = ev.Seq
}

// get returns the event at seq, or nil when seq is outside [oldest, head].
func (r *ring) get(seq uint64) *Event {
	if seq == 0 || seq > r.head || seq < r.oldest() {
		return nil
	}
	return r.slots[seq%r.capacity()]
}

// appendRange appends the stored events with seq in [from, to] to dst.
// The caller has checked from >= oldest() and to <= head.
func (r *ring) appendRange(dst []*Event, from, to uint64) []*Event {
	for seq := from; seq <= to; seq++ {
		dst = append(dst, r.slots[seq%r.capacity()])
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
		clear(r.slots)
		r.head, r.base = seq, seq+1
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
