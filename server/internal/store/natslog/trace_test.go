package natslog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestTraceparentTravelsWithTheCommit: a commit published with a
// traceparent through replica A (Publish or PublishBatch) carries it on
// every replica: on B from its ring (followed live) and from the stream
// (a cursor older than B's ring), and after a restart rebuilds from the
// stream; a commit published without one has none.
func TestTraceparentTravelsWithTheCommit(t *testing.T) {
	dir := t.TempDir()
	ns, nc := embedded(t, dir)
	nc2 := connectTo(t, ns)
	la := openLog(t, nc, natslog.Options{})
	lb := openLog(t, nc2, natslog.Options{})
	a, b := newHub(t, la, 2), newHub(t, lb, 2)
	tp := func(i int) string { return fmt.Sprintf("00-%032x-%016x-01", i+1, i+1) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish(t, a, "", fact("t", "", -1)) // seq 1: the cursor below
	want := map[uint64]string{}
	for i := range 3 {
		r, err := a.PublishCommit(ctx, hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", i)}, Traceparent: tp(i)})
		if err != nil {
			t.Fatal(err)
		}
		want[r.Seq] = tp(i)
	}
	rs, err := a.PublishBatch(ctx, []hub.Commit{
		{Facts: []*ringcastv1.Fact{fact("t", "", 10)}, Traceparent: tp(10)},
		{Facts: []*ringcastv1.Fact{fact("t", "", 11)}, Traceparent: tp(11)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want[rs[0].Seq], want[rs[1].Seq] = tp(10), tp(11)
	plain := publish(t, a, "", fact("t", "", 12))
	want[plain.Seq] = ""
	check := func(name string, h *hub.Hub) {
		t.Helper()
		_, msgs := run(t, h, hub.Request{SinceSeq: 1, Epoch: la.Epoch(), EndAtHead: true})
		got := map[uint64]string{}
		for _, m := range msgs {
			if c := m.GetCommit(); c != nil {
				got[m.Seq] = c.Traceparent
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d commits, want %d", name, len(got), len(want))
		}
		for seq, w := range want {
			if got[seq] != w {
				t.Fatalf("%s: commit %d traceparent %q, want %q", name, seq, got[seq], w)
			}
		}
	}
	check("replica A", a)
	check("replica B (ring of 2: the older commits from the stream)", b)
	c := newHub(t, openLog(t, nc2, natslog.Options{}), 16)
	check("a replica rebuilt from the stream", c)
}
