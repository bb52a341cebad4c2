package hub

// ring holds the last len(slots) positioned events, addressed by seq.
//
// Invariants (the indexes only grow):
//   - head is the highest seq stored; 0 means nothing was ever stored.
//   - the stored seqs are exactly [oldest(), head], and event seq lives in
//     slots[seq % len(slots)].
//   - oldest() = max(1, head-len(slots)+1); an empty ring has oldest() = 1,
//     so oldest()-1 == head and "resume after head" is servable.
//
// ring does no locking: Hub.mu guards it.
type ring struct {
	slots []*Event
	head  uint64
}

func newRing(capacity int) ring {
	return ring{slots: make([]*Event, capacity)}
}

func (r *ring) capacity() uint64 { return uint64(len(r.slots)) }

// oldest is the lowest seq still stored (head+1 when the ring is empty).
func (r *ring) oldest() uint64 {
	if r.head < r.capacity() {
		return 1
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
