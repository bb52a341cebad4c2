package natslog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/natslog"
)

// blockDir is where the embedded server keeps a stream's message blocks.
func blockDir(dataDir, stream string) string {
	return filepath.Join(dataDir, "jetstream", "$G", "streams", stream, "msgs")
}

// damageBlock damages the first message block of the stream in dataDir, the
// server stopped: overwrite 200 bytes in its middle, truncate it to half,
// empty it, or delete it.
func damageBlock(t *testing.T, dataDir, stream, how string) {
	t.Helper()
	blk := filepath.Join(blockDir(dataDir, stream), "1.blk")
	fi, err := os.Stat(blk)
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case "overwrite":
		f, err := os.OpenFile(blk, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		junk := []byte(strings.Repeat("\xa5", 200))
		if _, err := f.WriteAt(junk, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	case "truncate":
		err = os.Truncate(blk, fi.Size()/2)
	case "empty":
		err = os.Truncate(blk, 0)
	case "delete":
		err = os.Remove(blk)
	default:
		t.Fatalf("damage %q", how)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestADamagedEmbeddedStoreIsNotServedUnderItsEpoch: 20 keyed commits,
// a clean stop, the stream's first message block damaged on disk (bytes
// overwritten, truncated, emptied, deleted), a start: Open refuses the
// stream, naming it and the damage, and says so again on a second start.
// With Recover it is served under a new epoch: a consumer's cursor of the
// old epoch gets ResyncRequired, a new commit gets a seq above every seq
// acknowledged before (none reissued), a retried key acknowledged before
// gets a receipt of the new epoch only, and a clean restart after the
// recovery keeps the new epoch. Without damage a restart keeps the epoch.
func TestADamagedEmbeddedStoreIsNotServedUnderItsEpoch(t *testing.T) {
	for _, how := range []string{"none", "overwrite", "truncate", "empty", "delete"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			var epoch uint64
			{
				ns, nc := embedded(t, dir)
				l := openLog(t, nc, natslog.Options{})
				h, err := hub.New(hub.Config{Log: l, Window: 64, Lease: -1})
				if err != nil {
					t.Fatal(err)
				}
				for i := 1; i <= 20; i++ {
					if r := publish(t, h, fmt.Sprintf("k%d", i), fact("t", "", i)); r.Seq != uint64(i) {
						t.Fatalf("receipt %+v, want seq %d", r, i)
					}
				}
				epoch = h.Epoch()
				h.Drain()
				h.Close()
				nc.Close()
				ns.Shutdown()
				ns.WaitForShutdown()
			}
			if how == "none" {
				_, nc := embedded(t, dir)
				if l := openLog(t, nc, natslog.Options{}); l.Epoch() != epoch {
					t.Fatalf("epoch %x after a clean restart, want %x", l.Epoch(), epoch)
				}
				return
			}
			damageBlock(t, dir, natslog.DefaultStream, how)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for start := range 2 {
				ns, nc := embedded(t, dir)
				_, err := natslog.Open(ctx, nc, natslog.Options{})
				var d *natslog.DamagedError
				if !errors.As(err, &d) || !errors.Is(err, hub.ErrLogDamaged) || !strings.Contains(err.Error(), `stream "ringcast"`) || d.Epoch != epoch {
					t.Fatalf("start %d after %s: Open = %v; want a DamagedError naming the stream and epoch %x", start+1, how, err, epoch)
				}
				t.Logf("start %d: %v", start+1, err)
				nc.Close()
				ns.Shutdown()
				ns.WaitForShutdown()
			}
			var recovered uint64
			{
				ns, nc := embedded(t, dir)
				l := openLog(t, nc, natslog.Options{Recover: true})
				recovered = l.Epoch()
				if recovered == epoch {
					t.Fatalf("recovered under the old epoch %x", epoch)
				}
				h, err := hub.New(hub.Config{Log: l, Window: 64, Lease: -1})
				if err != nil {
					t.Fatal(err)
				}
				commits, msgs := run(t, h, hub.Request{SinceSeq: 15, Epoch: epoch, EndAtHead: true})
				if len(commits) != 0 || msgs[len(msgs)-1].GetResyncRequired() == nil {
					t.Fatalf("cursor 15 of the old epoch: commits %v, messages %v; want ResyncRequired and no commit", commits, msgs)
				}
				r := publish(t, h, "", fact("t", "", 21))
				if r.Seq <= 20 || r.Epoch != recovered {
					t.Fatalf("new commit: receipt %+v; want a seq above 20 under epoch %x", r, recovered)
				}
				for _, k := range []string{"k5", "k15"} {
					again := publish(t, h, k, fact("t", "", 99))
					if again.Epoch != recovered || (!again.Duplicate && again.Seq <= r.Seq) {
						t.Fatalf("retry of %s: receipt %+v; want the new epoch %x and, appended again, a new seq", k, again, recovered)
					}
				}
				h.Drain()
				h.Close()
				nc.Close()
				ns.Shutdown()
				ns.WaitForShutdown()
			}
			_, nc := embedded(t, dir)
			if l := openLog(t, nc, natslog.Options{}); l.Epoch() != recovered {
				t.Fatalf("epoch %x on a clean restart after the recovery, want %x", l.Epoch(), recovered)
			}
		})
	}
}

// TestAStreamPurgedOrHoledUnderAReplicaStopsIt: the stream is purged
// (whole, or all but its newest commits) or loses a commit in its middle
// under a running hub: the hub reports ErrLogDamaged on Failed, drains, and
// serves nothing more under its epoch; a restart refuses the stream, and
// with Recover serves it under a new epoch with seqs going on above the
// old head.
func TestAStreamPurgedOrHoledUnderAReplicaStopsIt(t *testing.T) {
	for _, how := range []string{"purge", "keep", "delete"} {
		t.Run(how, func(t *testing.T) {
			_, nc := embedded(t, t.TempDir())
			l := openLog(t, nc, natslog.Options{})
			h := newHub(t, l, 16)
			for i := range 6 {
				publish(t, h, fmt.Sprintf("k%d", i), fact("t", "", i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			st, err := js.Stream(ctx, natslog.DefaultStream)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "purge":
				err = st.Purge(ctx)
			case "keep":
				err = st.Purge(ctx, jetstream.WithPurgeKeep(2))
			case "delete":
				err = st.DeleteMsg(ctx, 3)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-h.Failed():
				if !errors.Is(err, hub.ErrLogDamaged) || !strings.Contains(err.Error(), `stream "ringcast"`) {
					t.Fatalf("Failed: %v, want ErrLogDamaged naming the stream", err)
				}
			case <-ctx.Done():
				t.Fatal("the hub did not notice the stream was damaged")
			}
			if st := h.Status(); st.State != ringcastv1.ServerState_SERVER_STATE_DRAINING {
				t.Fatalf("state %v, want DRAINING", st.State)
			}
			if _, err := h.Publish([]*ringcastv1.Fact{fact("t", "", 9)}, "k9"); !errors.Is(err, hub.ErrDraining) {
				t.Fatalf("publish after the damage: %v, want ErrDraining", err)
			}
			if _, err := natslog.Open(ctx, nc, natslog.Options{}); !errors.Is(err, hub.ErrLogDamaged) {
				t.Fatalf("Open after the damage: %v, want ErrLogDamaged", err)
			}
			again := openLog(t, nc, natslog.Options{Recover: true})
			if again.Epoch() == l.Epoch() {
				t.Fatal("recovered under the old epoch")
			}
			r, err := again.Append(ctx, time.Now(), commit("", 1))
			if err != nil || r.Seq <= 6 {
				t.Fatalf("append after the recovery: %+v, %v; want a seq above 6", r, err)
			}
			if _, _, err := l.Range(ctx); !errors.Is(err, hub.ErrLogReplaced) && !errors.Is(err, hub.ErrLogDamaged) {
				t.Fatalf("Range of the old Log after the recovery: %v; want it refused", err)
			}
		})
	}
}
