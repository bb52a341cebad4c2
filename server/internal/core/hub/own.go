package hub

import (
	"cmp"
	"slices"
)

// EchoLog is a Log that hands the hub the commits it stores through this
// hub (Append, AppendBatch) as soon as the store acknowledged them, so a
// replica's own commits enter its ring from the acknowledgement and Follow
// only fills the gaps between them: the commits of other replicas, and
// any of its own the hub did not take. The hub gives it its Intake once,
// in New, before it follows the Log.
type EchoLog interface {
	Log
	Echo(Intake)
}

// Intake is where an EchoLog hands the hub its own commits.
type Intake struct {
	// Take is called with each new commit an append stored (never a
	// duplicate), after the store acknowledged it and before the append
	// returns, exactly as Follow will give it (seq, time, facts,
	// traceparent, fingerprint). It may be called from any goroutine and
	// out of seq order; the hub puts each commit in the ring when it is
	// next in order. It reports false when the hub did not take the
	// commit (too many are waiting out of order): Follow must bring it.
	Take func(*Event) bool
	// Held reports whether the hub holds seq or has taken it (Take): then
	// Follow may go past the commit at seq without decoding it or calling
	// apply. Follow asks it in seq order, as it would apply; a taken
	// commit it reports enters the ring then, with any taken commit below
	// it (seqs between them are holes of the Log).
	Held func(seq uint64) bool
	// Head is the seq up to which the hub holds every commit of the Log
	// (or went past its holes): a Follow that starts again, as a Log
	// whose appends are the only ones does after it was idle, may start
	// after it.
	Head func() uint64
}

// maxOwn bounds the own commits the hub holds out of order, waiting for
// Follow to bring the commits before them; past it Take drops them and
// Follow brings them too.
const maxOwn = 4096

// ownCommits is the own commits taken out of order, by ascending seq
// (guarded by the hub's mu).
type ownCommits []*Event

// take is Intake.Take.
func (h *Hub) take(ev *Event) bool {
	h.mu.Lock()
	pushed, taken := false, true
	switch {
	case ev.Seq <= h.ring.head:
	case ev.Seq == h.ring.head+1:
		h.pushLocked(ev)
		pushed = true
	case len(h.own) < maxOwn:
		if i, found := slices.BinarySearchFunc(h.own, ev.Seq, bySeq); !found {
			h.own = slices.Insert(h.own, i, ev)
		}
	default:
		taken = false
	}
	h.mu.Unlock()
	if pushed {
		h.signal()
	}
	return taken
}

// heldUpTo is Intake.Head.
func (h *Hub) heldUpTo() uint64 { return h.heldHead.Load() }

// held is Intake.Held.
func (h *Hub) held(seq uint64) bool {
	if seq <= h.heldHead.Load() {
		return true
	}
	h.mu.Lock()
	if seq <= h.ring.head {
		h.mu.Unlock()
		return true
	}
	if _, found := slices.BinarySearchFunc(h.own, seq, bySeq); !found {
		h.mu.Unlock()
		return false
	}
	h.enterOwnLocked(seq + 1) // seqs between them are holes: Follow went past them
	h.mu.Unlock()
	h.signal()
	return true
}

// pushLocked puts the commit next in order in the ring and the latest-per-key
// table, then every own commit taken that follows it without a gap. The
// caller holds mu and signals after unlocking.
func (h *Hub) pushLocked(ev *Event) {
	h.appendLocked(ev)
	n := 0
	for _, o := range h.own {
		switch {
		case o.Seq <= h.ring.head:
		case o.Seq == h.ring.head+1:
			h.appendLocked(o)
		default:
			h.own[n] = o
			n++
		}
	}
	clear(h.own[n:])
	h.own = h.own[:n]
	h.heldHead.Store(h.ring.head)
}

// enterOwnLocked puts the own commits taken with a seq below limit in the
// ring, in order, the seqs between them left as holes.
func (h *Hub) enterOwnLocked(limit uint64) {
	for len(h.own) > 0 && h.own[0].Seq < limit {
		h.ring.skipTo(h.own[0].Seq - 1)
		h.pushLocked(h.own[0])
	}
}

func bySeq(e *Event, seq uint64) int { return cmp.Compare(e.Seq, seq) }
