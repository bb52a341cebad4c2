package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// metaStream is the stream behind the bookkeeping bucket.
const metaStream = "KV_" + natslog.MetaBucket

// publish20 publishes 20 keyed commits (k1…k20) on a fresh store in dir,
// stops it cleanly and returns the epoch.
func publish20(t *testing.T, dir string) uint64 {
	t.Helper()
	ns, nc := embedded(t, dir)
	l := openLog(t, nc, natslog.Options{})
	h, err := hub.New(hub.Config{Log: l, Window: 64, Lease: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		if r := publish(t, h, fmt.Sprintf("k%d", i), markedFact(i)); r.Seq != uint64(i) {
			t.Fatalf("receipt %+v, want seq %d", r, i)
		}
	}
	e := h.Epoch()
	h.Drain()
	h.Close()
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	return e
}

// loseBookkeeping damages the bookkeeping of the store in dir, stopped:
// the bucket's directory removed, or its message block damaged as
// damageBlock does.
func loseBookkeeping(t *testing.T, dir, how string) {
	t.Helper()
	if how == "remove" {
		if err := os.RemoveAll(filepath.Join(dir, "jetstream", "$G", "streams", metaStream)); err != nil {
			t.Fatal(err)
		}
		return
	}
	damageBlock(t, dir, metaStream, how)
}

// servesSafely checks a store started after a fault: the epoch is old
// (the record survived) or a new one; a cursor of the old epoch at 15
// resumes only under the old epoch, else resyncs; a new commit under the
// old epoch is stored above seq 20, and a retry of k15 is never a new
// commit under the old epoch; the store is available (never up yet unable
// to publish).
func servesSafely(t *testing.T, l *natslog.Log, old uint64) {
	t.Helper()
	h := newHub(t, l, 64)
	commits, msgs := run(t, h, hub.Request{SinceSeq: 15, Epoch: old, EndAtHead: true})
	if l.Epoch() != old && (len(commits) != 0 || msgs[len(msgs)-1].GetResyncRequired() == nil) {
		t.Fatalf("cursor 15 of the old epoch on a new one: commits %v, last message %v; want ResyncRequired", commits, msgs[len(msgs)-1])
	}
	r := publish(t, h, "", fact("t", "", 21))
	if r.Seq <= 20 && r.Epoch == old {
		t.Fatalf("new commit at seq %d of the old epoch: a seq acknowledged before is given again", r.Seq)
	}
	again := publish(t, h, "k15", markedFact(15)) // a retry: the same facts
	if again.Epoch == old && !again.Duplicate {
		t.Fatalf("retry of k15 appended again under the old epoch: %+v", again)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Available(ctx); err != nil {
		t.Fatalf("served, yet not available: %v", err)
	}
}

// TestLostBookkeepingIsCheckedLikeTheCommits: 20 keyed commits, a clean
// stop, the bookkeeping lost (the bucket removed) with the commits whole or
// damaged. A whole stream is rebuilt under a new epoch, logged at Warn
// naming the bucket (a loss of its newest commits cannot be seen without
// the bookkeeping), and a clean restart keeps that epoch; a damaged one
// (its block truncated: holes) is refused at every start, naming the
// bookkeeping and the damage, and with Recover served under a new epoch.
// The bucket's own block damaged (overwritten, truncated, emptied,
// deleted) is either refused naming the bookkeeping or served safely:
// never up yet unable to publish, never a seq reused under the old epoch.
func TestLostBookkeepingIsCheckedLikeTheCommits(t *testing.T) {
	for _, c := range []struct{ book, commits string }{
		{"remove", ""}, {"remove", "truncate"}, {"remove", "overwrite"}, {"remove", "delete"},
		{"overwrite", ""}, {"truncate", ""}, {"empty", ""}, {"delete", ""}, {"overwrite", "truncate"},
	} {
		t.Run(c.book+"+"+c.commits, func(t *testing.T) {
			dir := t.TempDir()
			old := publish20(t, dir)
			loseBookkeeping(t, dir, c.book)
			if c.commits != "" {
				damageBlock(t, dir, natslog.DefaultStream, c.commits)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var logs logbuf.Buffer
			start := func(opts natslog.Options) (*natslog.Log, error) {
				_, nc := embedded(t, dir)
				opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				l, err := natslog.Open(ctx, nc, opts)
				if err == nil {
					_, err = hub.NewContext(ctx, hub.Config{Log: l, Window: 64, Lease: -1})
				}
				return l, err
			}
			l, err := start(natslog.Options{})
			if c.book == "remove" && c.commits == "" {
				if err != nil {
					t.Fatalf("start on a whole stream without its bookkeeping: %v", err)
				}
				if l.Epoch() == old {
					t.Fatal("rebuilt under the old epoch")
				}
				if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "bookkeeping is lost") || !strings.Contains(logs.String(), "bucket="+natslog.MetaBucket) {
					t.Errorf("log:\n%s\nwant a Warn naming the bookkeeping lost and the bucket", logs.String())
				}
				servesSafely(t, l, old)
				again, err := start(natslog.Options{})
				if err != nil || again.Epoch() != l.Epoch() {
					t.Fatalf("clean restart after the rebuild: %v, epoch changed %v", err, err == nil && again.Epoch() != l.Epoch())
				}
				return
			}
			mustRefuse := c.book == "remove" && (c.commits == "truncate" || c.commits == "delete") // holes, first commits gone
			if err == nil {
				if mustRefuse {
					t.Fatalf("start after %s: served; want it refused, naming the bookkeeping\n%s", t.Name(), logs.String())
				}
				if c.book == "remove" && l.Epoch() == old {
					t.Fatal("served under the old epoch without its bookkeeping")
				}
				t.Logf("served: epoch kept %v", l.Epoch() == old)
				servesSafely(t, l, old)
				return
			}
			if !errors.Is(err, hub.ErrLogDamaged) && !errors.Is(err, natslog.ErrBookkeeping) || mustRefuse && !strings.Contains(err.Error(), "bookkeeping (key ringcast of the key-value bucket ringcast_meta) is missing") {
				t.Fatalf("start: %v; want it refused as damaged or for its bookkeeping, naming it", err)
			}
			t.Logf("start 1: %v", err)
			if !errors.Is(err, hub.ErrLogDamaged) {
				// A bucket that did not keep what was written; a second start
				// may find it kept (the server reloaded its blocks): then it
				// is served safely.
				if l, err := start(natslog.Options{}); err == nil {
					servesSafely(t, l, old)
				}
				return
			}
			if _, err2 := start(natslog.Options{}); err2 == nil {
				t.Fatalf("second start served; the first was refused: %v", err)
			}
			l, err = start(natslog.Options{Recover: true})
			if err != nil {
				t.Fatalf("start with Recover: %v", err)
			}
			if l.Epoch() == old {
				t.Fatal("recovered under the old epoch")
			}
			servesSafely(t, l, old)
		})
	}
}

// TestBookkeepingLostWhileServing: the bucket deleted under a running
// Log. Available names the bookkeeping (readiness turns off, saying why);
// every commit after that is refused as unavailable before it reaches the
// stream, with a message naming neither the bucket nor the stream. A
// publish that came first is stored and acknowledged (its receipt is
// true); the mark's writer, raising the mark after it, finds the record
// gone (Flush waits for it here), and from then on commits are refused:
// only the commits acknowledged before that are stored without their mark.
func TestBookkeepingLostWhileServing(t *testing.T) {
	for _, first := range []string{"available", "publish"} {
		t.Run(first, func(t *testing.T) {
			_, nc := embedded(t, t.TempDir())
			l := openLog(t, nc, natslog.Options{})
			h := newHub(t, l, 64)
			for i := 1; i <= 5; i++ {
				publish(t, h, fmt.Sprintf("k%d", i), fact("t", "", i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			if err := js.DeleteKeyValue(ctx, natslog.MetaBucket); err != nil {
				t.Fatal(err)
			}
			refused := func(key string) {
				t.Helper()
				_, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 9)}, key)
				if !errors.Is(err, hub.ErrUnavailable) || !errors.Is(err, natslog.ErrStoreUnavailable) {
					t.Fatalf("publish with the bookkeeping lost: %v; want unavailable", err)
				}
				if strings.Contains(err.Error(), natslog.MetaBucket) || strings.Contains(err.Error(), `"ringcast"`) {
					t.Errorf("publish error %q names the bucket or the stream", err)
				}
			}
			want := uint64(5)
			if first == "publish" {
				if r := publish(t, h, "p1", fact("t", "", 9)); r.Seq != 6 {
					t.Fatalf("the publish before the loss was found: receipt %+v, want seq 6", r)
				}
				if err := l.Flush(ctx); !errors.Is(err, natslog.ErrStoreUnavailable) {
					t.Fatalf("Flush with the bucket deleted: %v; want unavailable", err)
				}
				want = 6 // acknowledged before its mark's write found the record gone
			}
			err = l.Available(ctx)
			var be *natslog.BookkeepingError
			if !errors.As(err, &be) || !errors.Is(err, natslog.ErrStoreUnavailable) || !strings.Contains(err.Error(), natslog.MetaBucket) {
				t.Fatalf("Available with the bucket deleted: %v; want a BookkeepingError naming it", err)
			}
			for _, k := range []string{"p2", ""} {
				refused(k)
			}
			if _, err := h.PublishBatch(ctx, []hub.Commit{commit("b", 1), commit("", 2)}); !errors.Is(err, natslog.ErrStoreUnavailable) {
				t.Fatalf("batch with the bookkeeping lost: %v; want unavailable", err)
			}
			if n := lastSeq(t, l); n != want {
				t.Fatalf("the stream's last seq is %d, want %d: commits were stored without their mark", n, want)
			}
		})
	}
}
