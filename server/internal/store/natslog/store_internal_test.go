package natslog

import (
	"context"
	"fmt"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// openStore opens a Store on an embedded nats-server, with now as its
// clock.
func openStore(t *testing.T, now func() time.Time) *Store {
	t.Helper()
	ns, err := StartServer(EmbeddedOptions(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := ConnectEmbedded(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, nc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Store{Log: l, nc: nc, now: now}
}

func wantAvailable(t *testing.T, l *Store, want bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Available(ctx); (err == nil) != want {
		t.Fatalf("%s: Available: %v, want available %v", what, err, want)
	}
}

// TestStorageExhaustedHoldsReadinessOffForABoundedTime: an append refused
// for want of storage keeps the store unavailable while its storage use
// does not fall, but for storeFullHold at most: then it is available until
// an append is refused again.
func TestStorageExhaustedHoldsReadinessOffForABoundedTime(t *testing.T) {
	now := time.Unix(1000, 0)
	l := openStore(t, func() time.Time { return now })
	wantAvailable(t, l, true, "a new store")
	exhausted := func() { l.note(fmt.Errorf("%w: %w", ErrStoreFull, ErrStorageExhausted)) }
	exhausted()
	wantAvailable(t, l, false, "after an append refused for want of storage")
	now = now.Add(storeFullHold - time.Second)
	wantAvailable(t, l, false, "storage use unchanged, within the hold")
	exhausted() // a refusal while held does not extend the hold
	now = now.Add(time.Second)
	wantAvailable(t, l, true, "storage use unchanged, past the hold")
	exhausted()
	wantAvailable(t, l, false, "after the next refused append")
}

// TestStreamFullHoldsReadinessOffUntilTheStreamChanges: an append refused
// by the stream's own limits keeps the store unavailable although the Log's
// own check sees room (it cannot know the size of the next commit), until
// the stream's contents change.
func TestStreamFullHoldsReadinessOffUntilTheStreamChanges(t *testing.T) {
	now := time.Unix(1000, 0)
	l := openStore(t, func() time.Time { return now })
	l.note(fmt.Errorf("%w: maximum bytes exceeded", ErrStoreFull))
	wantAvailable(t, l, false, "after an append refused by the stream's limits")
	wantAvailable(t, l, false, "the stream unchanged")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Another writer's commit changes the stream.
	if _, err := l.Log.Append(ctx, now, hub.Commit{Facts: []*ringcastv1.Fact{{Topic: "t", Type: "store.test"}}}); err != nil {
		t.Fatal(err)
	}
	wantAvailable(t, l, true, "after the stream changed")
}
