package sse_test

import (
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// ids returns the ids of seqs in epoch h's form, comma-joined.
func ids(h *hub.Hub, seqs ...uint64) string {
	var s []string
	for _, q := range seqs {
		s = append(s, id(h, q))
	}
	return strings.Join(s, ",")
}

// commitIDs returns the ids of the commit events of evs, comma-joined,
// failing on any other positioned event.
func commitIDs(t *testing.T, evs []event) string {
	t.Helper()
	var s []string
	for _, ev := range evs {
		if ev.Name != names.EventCommit {
			t.Fatalf("unexpected %q event (id %q) in a resume: %s", ev.Name, ev.ID, ev.Data)
		}
		s = append(s, ev.ID)
	}
	return strings.Join(s, ",")
}

// TestResumeAfterRestart: a Last-Event-ID from before a restart. On memory
// the restart is a new epoch: gap(epoch_mismatch), then the snapshot. On a
// durable store the epoch is the stream's: the id resumes with exactly the
// commits after it (docs/protocol.md, "Stores").
func TestResumeAfterRestart(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		before := publish(t, srv.Hub(), "a/1")
		last := id(srv.Hub(), before)
		srv.Restart()
		h := srv.Hub()
		a, b := publish(t, h, "a/2"), publish(t, h, "a/3")

		s := open(t, srv.URL, "", last)
		if !store.Durable {
			ge := s.expect(names.EventGap)
			if g := decode(t, ge).GetGap(); g.GetReason() != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
				t.Fatalf("gap = %s, want epoch_mismatch", ge.Data)
			}
			snap := s.untilCaughtUp()
			if got := snap[len(snap)-1].ID; got != id(h, b) {
				t.Fatalf("snapshot after the gap ends at %q, want %q", got, id(h, b))
			}
			return
		}
		if got := commitIDs(t, s.untilCaughtUp()); got != ids(h, a, b) {
			t.Fatalf("resumed ids after a restart = %s, want %s (no gap, no duplicate)", got, ids(h, a, b))
		}
	})
}

// TestLastEventIDFromOneReplicaResumesOnAnother: two replicas on one
// JetStream stream share the epoch and the seqs. An EventSource reading
// replica A, whose last id is mid-stream, reconnects to replica B (a load
// balancer without stickiness) and gets every commit after that id —
// published through either replica — once, in order, with no gap. Memory
// has no replicas: one process holds the log.
func TestLastEventIDFromOneReplicaResumesOnAnother(t *testing.T) {
	t.Run(ringtest.JetStream.Name, func(t *testing.T) {
		rs := ringtest.JetStream.StartReplicas(t, ringtest.Config(), 2)
		a, b := rs[0], rs[1]
		if a.Hub().Epoch() != b.Hub().Epoch() {
			t.Fatalf("replicas' epochs differ: %x, %x", a.Hub().Epoch(), b.Hub().Epoch())
		}
		h := a.Hub()
		var seqs []uint64
		for i := range 4 {
			via := a
			if i%2 == 1 {
				via = b
			}
			seqs = append(seqs, publish(t, via.Hub(), "a/1"))
		}
		// A's EventSource reads up to the second commit; then it goes.
		s := open(t, a.URL, "", "")
		var last string
		for last != id(h, seqs[1]) {
			switch ev := s.next(); {
			case ev.end, ev.Name == names.EventGap:
				t.Fatalf("A's stream: %+v before %s", ev, id(h, seqs[1]))
			case ev.Name == names.EventCommit:
				last = ev.ID
			}
		}
		s.cancel()
		for i := range 4 {
			via := b
			if i%2 == 1 {
				via = a
			}
			seqs = append(seqs, publish(t, via.Hub(), "a/1"))
		}
		// A receipt means the publishing replica holds the commit; B
		// receives A's a moment later through its consumer, and caught-up
		// is relative to what B holds (docs/protocol.md, "Stores").
		waitHead(t, b.Hub(), seqs[len(seqs)-1])

		r := open(t, b.URL, "", last)
		st := r.expect(names.EventStatus) // B's own status, unpositioned
		if st.ID != "" || decode(t, st).GetSeq() != 0 {
			t.Fatalf("replica status %+v, want no id and seq 0", st)
		}
		if got, want := commitIDs(t, r.untilCaughtUp()), ids(h, seqs[2:]...); got != want {
			t.Fatalf("B resumed A's id %s with %s, want %s (no gap, no duplicate)", last, got, want)
		}
		live := publish(t, a.Hub(), "a/1")
		if ev := r.expect(names.EventCommit); ev.ID != id(h, live) {
			t.Fatalf("B's live event %q, want %q published through A", ev.ID, id(h, live))
		}
	})
}

// waitHead waits until h holds seq.
func waitHead(t *testing.T, h *hub.Hub, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		if _, head := h.Bounds(); head >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never received seq %d", seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
