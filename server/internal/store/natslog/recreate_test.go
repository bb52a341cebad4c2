package natslog_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestAStreamCreatedAgainStopsTheReplica: the stream is deleted and created
// again under the running hub, and the new stream receives commits past the
// hub's head. The hub reports ErrLogReplaced on Failed, has drained
// (publishes refused), and served nothing of the new stream under the old
// epoch. Range says so too.
func TestAStreamCreatedAgainStopsTheReplica(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	h := newHub(t, l, 16)
	for i := range 3 {
		publish(t, h, "", fact("t", "", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, natslog.DefaultStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natslog.DefaultStream, Subjects: []string{natslog.Subject(natslog.DefaultStream)}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := js.Publish(ctx, natslog.Subject(natslog.DefaultStream), []byte{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-h.Failed():
		if !errors.Is(err, hub.ErrLogReplaced) || !strings.Contains(err.Error(), "created again") {
			t.Fatalf("Failed: %v, want ErrLogReplaced", err)
		}
	case <-ctx.Done():
		t.Fatal("the hub did not notice the stream was created again")
	}
	if _, head := h.Bounds(); head != 3 {
		t.Fatalf("head %d after the stream was replaced, want 3: the new stream's commits were taken as the old epoch's", head)
	}
	if st := h.Status(); st.State != ringcastv1.ServerState_SERVER_STATE_DRAINING {
		t.Fatalf("state %v, want DRAINING", st.State)
	}
	if _, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 9)}, ""); !errors.Is(err, hub.ErrDraining) {
		t.Fatalf("publish after the stream was replaced: %v, want ErrDraining", err)
	}
	if _, _, err := l.Range(ctx); !errors.Is(err, hub.ErrLogReplaced) {
		t.Fatalf("Range: %v, want ErrLogReplaced", err)
	}
	if err := l.Follow(ctx, 4, func(*hub.Event) { t.Error("Follow applied a commit of the new stream") }); !errors.Is(err, hub.ErrLogReplaced) {
		t.Fatalf("Follow: %v, want ErrLogReplaced", err)
	}
}

// TestAPublishIntoAStreamCreatedAgainIsAnError: right after the stream is
// deleted and created again, before any range check, a publish or a batch
// that JetStream stores in the new stream at a seq the replica has already
// seen is an error wrapping ErrLogReplaced, never a receipt with the old
// epoch; a hub answers it unavailable (or draining) and fails.
func TestAPublishIntoAStreamCreatedAgainIsAnError(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	other := openLog(t, nc, natslog.Options{}) // no hub: nothing checks its range
	h := newHub(t, l, 16)
	for i := range 3 {
		publish(t, h, "", fact("t", "", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, last, err := other.Range(ctx); err != nil || last != 3 {
		t.Fatalf("Range = %d, %v", last, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, natslog.DefaultStream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natslog.DefaultStream, Subjects: []string{natslog.Subject(natslog.DefaultStream)},
		AllowDirect: true, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 9)}, ""); err == nil || (!errors.Is(err, hub.ErrLogReplaced) && !errors.Is(err, hub.ErrDraining)) {
		t.Fatalf("publish into the new stream: %+v, %v; want an error wrapping ErrLogReplaced (or ErrDraining)", r, err)
	}
	if r, err := other.Append(ctx, time.Now(), commit("", 10)); !errors.Is(err, hub.ErrLogReplaced) {
		t.Fatalf("Append into the new stream: %+v, %v; want ErrLogReplaced", r, err)
	}
	if rs, err := other.AppendBatch(ctx, time.Now(), []hub.Commit{commit("", 11), commit("", 12)}); !errors.Is(err, hub.ErrLogReplaced) {
		t.Fatalf("AppendBatch into the new stream: %+v, %v; want ErrLogReplaced", rs, err)
	}
	select {
	case err := <-h.Failed():
		if !errors.Is(err, hub.ErrLogReplaced) {
			t.Fatalf("Failed: %v, want ErrLogReplaced", err)
		}
	case <-ctx.Done():
		t.Fatal("the hub did not fail")
	}
	if st := h.Status(); st.State != ringcastv1.ServerState_SERVER_STATE_DRAINING {
		t.Fatalf("state %v, want DRAINING", st.State)
	}
}

// TestConcurrentPublishesFromTwoReplicasAreNeverTakenForAReplacedStream:
// publishes and batches from two replicas at once, each replica seeing the
// other's commits arrive while its own acks are in flight, all get
// receipts.
func TestConcurrentPublishesFromTwoReplicasAreNeverTakenForAReplacedStream(t *testing.T) {
	ns, nc := embedded(t, t.TempDir())
	a, b := newHub(t, openLog(t, nc, natslog.Options{}), 64), newHub(t, openLog(t, connectTo(t, ns), natslog.Options{}), 64)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		h := []*hub.Hub{a, b}[g%2]
		wg.Go(func() {
			for i := range 40 {
				var err error
				if i%4 == 0 {
					_, err = h.PublishBatch(ctx, []hub.Commit{commit("", i), commit("", i+1)})
				} else {
					_, err = h.Publish([]*ringcastv1.Fact{fact("t", "", i)}, "")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
