package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestASoleWriterReadsOnlyWhatItCouldNotTake: a Log that is its stream's
// only writer (the server's embedded store) reads the stream at start,
// then stops its consumer: its commits enter the ring from their
// acknowledgements. When the hub cannot take one, Follow reads it from the
// stream: with every third commit left untaken, 16 publishers of single
// commits and batches still see every commit served once, in seq order.
// Once an append failed without JetStream's answer, the Log follows the
// stream for good: a commit it did not append reaches the hub.
func TestASoleWriterReadsOnlyWhatItCouldNotTake(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	first := openLog(t, nc, natslog.Options{SoleWriter: true})
	for i := range 5 {
		if _, err := first.Append(context.Background(), time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("sole", fmt.Sprint("before-", i), i)}}); err != nil {
			t.Fatal(err)
		}
	}

	l := openLog(t, nc, natslog.Options{SoleWriter: true})
	h := newHub(t, l, 4096)
	if _, head := h.Bounds(); head != 5 {
		t.Fatalf("after the start the ring's head is %d, want the stream's 5", head)
	}
	consumers := func(want int, why string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			info, err := l.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Consumers == want {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: the stream has %d consumers, want %d", why, info.State.Consumers, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	consumers(0, "read to the end")

	l.DropTakes(3)
	const publishers, each = 16, 20
	var (
		mu       sync.Mutex
		receipts = map[uint64]string{}
		wg       sync.WaitGroup
	)
	for p := range publishers {
		wg.Go(func() {
			rs, names := publishMixed(t, h, "sole", fmt.Sprint("p", p), each, 4, func(int) string { return "" })
			mu.Lock()
			defer mu.Unlock()
			for k, rc := range rs {
				receipts[rc.Seq] = names[k]
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// A receipt is given once the hub holds the commit: no wait is needed.
	total := uint64(5 + len(receipts))
	commits, msgs := run(t, h, hub.Request{SinceSeq: 0, Epoch: h.Epoch(), EndAtHead: true})
	if !equal(commits, seqRange(1, total)) {
		t.Fatalf("served seqs %v, want 1..%d once each", commits, total)
	}
	for _, m := range msgs {
		if c := m.GetCommit(); c != nil && m.Seq > 5 {
			if got, want := c.GetFacts()[0].GetKey(), receipts[m.Seq]; got != want {
				t.Fatalf("seq %d holds %q, its receipt was for %q", m.Seq, got, want)
			}
		}
	}
	consumers(0, "the untaken commits read")

	// An append without an answer: from then on the stream is followed,
	// and a commit another Log appends (which a sole writer never sees
	// otherwise) reaches this hub.
	l.Unsure(errors.New("no answer"))
	consumers(1, "unsure")
	other := openLog(t, nc, natslog.Options{})
	r, err := other.Append(context.Background(), time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("sole", "other", 0)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, head := h.Bounds(); head < r.Seq; _, head = h.Bounds() {
		if ctx.Err() != nil {
			t.Fatalf("the hub's head stays at %d: the commit at %d another Log appended does not reach it", head, r.Seq)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestASoleWriterStoresWhatItsCallerGaveUpOn: a sole writer's append
// goes on, and waits for JetStream's answer, even when its caller has
// gone: a commit stored enters the ring from its acknowledgement, as no
// consumer would bring it.
func TestASoleWriterStoresWhatItsCallerGaveUpOn(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{SoleWriter: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := l.Append(ctx, time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("sole", "b", 1)}})
	if err != nil || r.Seq != 1 {
		t.Fatalf("an append whose caller gave up: %+v, %v; want the commit stored at seq 1", r, err)
	}
}
