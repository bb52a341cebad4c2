package natslog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/natslog"
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
