package natslog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
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
	case "payload":
		// Only the bytes of commit 15's fact, not the record around them.
		data, rerr := os.ReadFile(blk)
		if rerr != nil {
			t.Fatal(rerr)
		}
		i := bytes.Index(data, []byte(marker(15)))
		if i < 0 {
			t.Fatal("commit 15's fact not found in the block")
		}
		copy(data[i:], strings.Repeat("X", len(marker(15))))
		err = os.WriteFile(blk, data, fi.Mode())
	default:
		t.Fatalf("damage %q", how)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// marker is the text of commit n's fact.
func marker(n int) string { return fmt.Sprintf("commit-marker-%04d", n) }

func markedFact(n int) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"m": marker(n)})
	return &ringcastv1.Fact{Topic: "t", Type: "test.fact", Payload: &ringcastv1.Fact_Data{Data: s}}
}

// startDamaged opens the stream and starts a hub on it, and returns the
// error of whichever refused: Open (the stream's state) or the hub's
// rebuild (a commit whose bytes changed).
func startDamaged(t *testing.T, ctx context.Context, dir string) error {
	ns, nc := embedded(t, dir)
	defer func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	l, err := natslog.Open(ctx, nc, natslog.Options{})
	if err != nil {
		return err
	}
	h, err := hub.NewContext(ctx, hub.Config{Log: l, Window: 64, Lease: -1})
	if err == nil {
		h.Close()
	}
	return err
}

// TestADamagedEmbeddedStoreIsNotServedUnderItsEpoch: 20 keyed commits,
// a clean stop, the stream's first message block damaged on disk (bytes
// overwritten, bytes of one commit's payload changed, truncated, emptied,
// deleted), a start: it is refused, naming the stream and the damage, and
// again on a second start.
// With Recover it is served under a new epoch: a consumer's cursor of the
// old epoch gets ResyncRequired, a new commit gets a seq above every seq
// acknowledged before (none reissued), a retried key acknowledged before
// gets a receipt of the new epoch only, and a clean restart after the
// recovery keeps the new epoch. Without damage a restart keeps the epoch.
func TestADamagedEmbeddedStoreIsNotServedUnderItsEpoch(t *testing.T) {
	for _, how := range []string{"none", "overwrite", "payload", "truncate", "empty", "delete"} {
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
					if r := publish(t, h, fmt.Sprintf("k%d", i), markedFact(i)); r.Seq != uint64(i) {
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
				err := startDamaged(t, ctx, dir)
				if !errors.Is(err, hub.ErrLogDamaged) || !strings.Contains(err.Error(), `stream "ringcast"`) {
					t.Fatalf("start %d after %s: %v; want it refused as damaged, naming the stream", start+1, how, err)
				}
				var d *natslog.DamagedError
				if errors.As(err, &d) && d.Epoch != epoch {
					t.Fatalf("damage reported for epoch %x, want %x", d.Epoch, epoch)
				}
				t.Logf("start %d: %v", start+1, err)
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
				// A store whose blocks were damaged may, reloading them, still
				// lose a commit the NATS server acknowledged after the
				// recovery: ringcast must then stop rather than serve on.
				lost := false
				pub := func(key string, f *ringcastv1.Fact) hub.Receipt {
					r, err := h.Publish([]*ringcastv1.Fact{f}, key)
					if err == nil {
						return r
					}
					select {
					case ferr := <-h.Failed():
						if !errors.Is(ferr, hub.ErrLogDamaged) || !strings.Contains(ferr.Error(), "acknowledged commits are lost") {
							t.Fatalf("publish after the recovery: %v; the hub failed: %v", err, ferr)
						}
						t.Logf("the NATS server lost a commit it acknowledged after the recovery, and the hub stopped: %v", ferr)
						lost = true
					case <-time.After(30 * time.Second):
						t.Fatalf("publish after the recovery: %v", err)
					}
					return hub.Receipt{}
				}
				r := pub("", fact("t", "", 21))
				if !lost && (r.Seq <= 20 || r.Epoch != recovered) {
					t.Fatalf("new commit: receipt %+v; want a seq above 20 under epoch %x", r, recovered)
				}
				for _, n := range []int{5, 15} {
					if lost {
						break
					}
					k := fmt.Sprintf("k%d", n)
					again := pub(k, markedFact(n)) // a retry: the same facts
					if !lost && (again.Epoch != recovered || (!again.Duplicate && again.Seq <= r.Seq)) {
						t.Fatalf("retry of %s: receipt %+v; want the new epoch %x and, appended again, a new seq", k, again, recovered)
					}
				}
				if lost {
					h.Close()
					return
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
				if _, err := h.Publish([]*ringcastv1.Fact{fact("t", "", i)}, fmt.Sprintf("k%d", i)); err != nil {
					select {
					case ferr := <-h.Failed():
						t.Fatalf("publish %d: %v; the hub failed: %v", i, err, ferr)
					default:
						t.Fatalf("publish %d: %v", i, err)
					}
				}
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
