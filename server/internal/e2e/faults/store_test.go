package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

// TestStoreCorruptedWhileConsumersHoldCursors: with the embedded store,
// consumers on every protocol hold cursors while commits flow; the server
// stops, 200 bytes in the middle of the stream's first message block are
// overwritten (acknowledged commits lost or unreadable), and the server refuses to start
// on it, naming the stream and its message blocks' directory. Started with --store-recover it serves a new
// epoch: every consumer resyncs with EPOCH_MISMATCH and is given, under
// the new epoch, the commits that survived (each as it was acknowledged)
// and every commit published after, once, in order; no seq acknowledged
// before is given to another commit, and no seq is acknowledged twice under
// one epoch. Should the NATS server, reloading the damaged blocks, lose a
// commit it acknowledged after the recovery, ringcast must stop saying so;
// started again with --store-recover it serves a newer epoch, and the same
// history holds across it.
func TestStoreCorruptedWhileConsumersHoldCursors(t *testing.T) {
	dir := t.TempDir()
	r := newRun(t, "", faultproxy.Seed(t), "--store", "embedded", "--data-dir", dir)
	r.consume(3, 0)
	r.publish(3 * time.Millisecond)
	r.awaitPublished(40) // enough that the damage loses some and spares some

	r.pubMu.Lock()
	old := r.last
	r.srv.stop(syscall.SIGTERM)
	blk := filepath.Join(dir, "jetstream", "$G", "streams", "ringcast", "msgs", "1.blk")
	fi, err := os.Stat(blk)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(blk, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 200)), fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.startRefused(); !strings.Contains(err.Error(), `stream "ringcast"`) ||
		!strings.Contains(err.Error(), filepath.Dir(blk)) ||
		!(strings.Contains(err.Error(), "is damaged") || strings.Contains(err.Error(), "cannot be read") || strings.Contains(err.Error(), "corrupted")) {
		t.Fatalf("start on the damaged store: %v; want a refusal naming the stream", err)
	}
	r.srv.args = append(r.srv.args, "--store-recover")
	r.srv.start()
	r.servedAfterDamage(old, true)
}

// servedAfterDamage checks a server started again after damage to the
// store (old: the last commit acknowledged before it; pubMu held, the
// publisher stopped): it serves a new epoch, holding the commits that
// survived (some lost when wantLost) each as it was acknowledged; then,
// publishing on, every consumer resyncs and the history holds: nothing
// lost or repeated within an epoch, no seq acknowledged before the damage
// given to a new commit. Should the NATS server, reloading damaged
// blocks, lose a commit it acknowledged after the recovery, ringcast must
// stop saying so; started again (with --store-recover) it serves a newer
// epoch, and the same history holds across it.
func (r *run) servedAfterDamage(old struct{ epoch, seq uint64 }, wantLost bool) {
	t := r.t
	t.Helper()
	epoch, survivors := r.snapshot()
	if epoch == old.epoch {
		t.Fatalf("served under the old epoch %016x after the damage", epoch)
	}
	if wantLost && (len(survivors) == 0 || len(survivors) >= len(r.receipts[old.epoch])) {
		t.Fatalf("%d of %d commits survived the damage; want some lost", len(survivors), len(r.receipts[old.epoch]))
	}
	for seq, facts := range survivors {
		if want, ok := r.receipts[old.epoch][seq]; !ok || want != facts {
			t.Fatalf("commit %d of the new epoch has %d facts; the old epoch's receipt said %d (%v)", seq, facts, want, ok)
		}
		r.hist.Published(epoch, seq, facts) // the new epoch serves them
	}
	// A store whose blocks were damaged may, reloading them, still lose
	// a commit the NATS server acknowledged after the recovery. ringcast
	// must then stop rather than serve on (natslog's damage test shows
	// it on one store); here it is started again with --store-recover,
	// and serves a newer epoch that every consumer resyncs to.
	r.mayStop = "acknowledged commits are lost"
	r.pubMu.Unlock()
	r.awaitPublished(40)
	r.stopPub()
	r.pubWG.Wait()
	recovered := epoch
	for restarts := 0; r.stopped || !r.settle(); restarts++ {
		if ended, err, logs := r.srv.ended(); !ended || !strings.Contains(logs, r.mayStop) {
			t.Fatalf("ringcast serve ended (%v) without saying %q; log:\n%s", err, r.mayStop, logs)
		}
		if restarts == 3 {
			t.Fatalf("the store lost acknowledged commits after %d recoveries", restarts)
		}
		from := r.last.epoch
		r.srv.stop(syscall.SIGKILL) // it has ended: collect it
		r.srv.start()
		next, served := r.snapshot()
		if next == from || next == old.epoch {
			t.Fatalf("served under the stopped epoch %016x again", next)
		}
		for seq, facts := range served {
			// Acknowledged commits were lost, and a refused publish may
			// have been stored: the newer epoch serves what it holds.
			r.hist.Published(next, seq, facts)
		}
		t.Logf("the store lost acknowledged commits of epoch %016x; %d commits served under epoch %016x", from, len(served), next)
		r.stopped = false
		r.publish(3 * time.Millisecond)
		r.awaitPublished(40)
		r.stopPub()
		r.pubWG.Wait()
	}
	sum := r.finish()
	for seq := range r.receipts[recovered] {
		if _, survived := survivors[seq]; !survived && seq <= old.seq {
			t.Errorf("seq %d, acknowledged before the damage, was given to a new commit", seq)
		}
	}
	if sum.Resyncs < len(r.consumers) {
		t.Errorf("%d resyncs for %d consumers across the recovery", sum.Resyncs, len(r.consumers))
	}
	t.Logf("%d commits before, %d survived; %v", len(r.receipts[old.epoch]), len(survivors), sum)
}

// snapshot reads the server's whole log straight (not through the proxy)
// and returns its epoch and the fact count of each commit.
func (r *run) snapshot() (uint64, map[uint64]int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hc := ringcast.NewHTTPClient(ringcast.ProtocolConnect)
	defer hc.CloseIdleConnections()
	c := ringcast.NewClient(r.srv.URL(), ringcast.WithHTTPClient(hc))
	var epoch uint64
	commits := map[uint64]int{}
	for it, err := range c.Subscribe(ringcast.WithEndAtHead()).Items(ctx) {
		if err != nil {
			r.t.Fatalf("read the recovered log: %v", err)
		}
		if it.Kind == ringcast.KindFact {
			epoch = it.Epoch
			commits[it.Seq]++
		}
	}
	return epoch, commits
}

// TestBookkeepingLostWhileConsumersHoldCursors: with the embedded store,
// consumers on every protocol hold cursors while commits flow; the server
// stops and its bookkeeping is lost (the ringcast_meta bucket's directory
// removed). With the commits whole, the server rebuilds the bookkeeping
// from the stream and serves it under a new epoch (a loss of its newest
// commits could not be seen): every consumer resyncs and is given every
// commit, once, in order. With the commit stream's first block also
// truncated (holes), the server refuses to start, naming the bookkeeping
// and the damage, and is never served under the old epoch: started with
// --store-recover it serves a new epoch with the commits that survived.
// Either way no seq is given to two commits under one epoch, and no seq
// acknowledged before the fault to a new commit.
func TestBookkeepingLostWhileConsumersHoldCursors(t *testing.T) {
	for _, commits := range []string{"whole", "truncated"} {
		t.Run(commits, func(t *testing.T) {
			dir := t.TempDir()
			r := newRun(t, "", faultproxy.Seed(t), "--store", "embedded", "--data-dir", dir)
			r.consume(3, 0)
			r.publish(3 * time.Millisecond)
			r.awaitPublished(40)

			r.pubMu.Lock()
			old := r.last
			r.srv.stop(syscall.SIGTERM)
			streams := filepath.Join(dir, "jetstream", "$G", "streams")
			if err := os.RemoveAll(filepath.Join(streams, "KV_ringcast_meta")); err != nil {
				t.Fatal(err)
			}
			if commits == "truncated" {
				blk := filepath.Join(streams, "ringcast", "msgs", "1.blk")
				fi, err := os.Stat(blk)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(blk, fi.Size()/2); err != nil {
					t.Fatal(err)
				}
				if err := r.srv.startRefused(); !strings.Contains(err.Error(), `stream "ringcast"`) ||
					!strings.Contains(err.Error(), "bookkeeping") || !strings.Contains(err.Error(), "ringcast_meta") {
					t.Fatalf("start without the bookkeeping on a damaged stream: %v; want a refusal naming the stream and its bookkeeping", err)
				}
				r.srv.args = append(r.srv.args, "--store-recover")
			}
			r.srv.start()
			if commits == "whole" && !strings.Contains(r.srv.logs.String(), "bookkeeping is lost") {
				t.Errorf("start without the bookkeeping logged no word of it:\n%s", r.srv.logs.String())
			}
			r.servedAfterDamage(old, commits == "truncated")
		})
	}
}
