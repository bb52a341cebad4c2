package natslog_test

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// cursorAt is a consumer's cursor after commit seq: the epoch, the seq and
// the fingerprint the stream gave it there.
func cursorAt(t *testing.T, h *hub.Hub, seq uint64) hub.Request {
	t.Helper()
	_, msgs := run(t, h, hub.Request{SinceSeq: seq - 1, Epoch: h.Epoch(), UntilSeq: seq})
	for _, m := range msgs {
		if m.Seq == seq && m.GetCommit() != nil {
			if m.Fingerprint == 0 {
				t.Fatalf("commit %d without a fingerprint", seq)
			}
			return hub.Request{SinceSeq: seq, Epoch: h.Epoch(), SinceFingerprint: m.Fingerprint, EndAtHead: true}
		}
	}
	t.Fatalf("no commit %d in %v", seq, msgs)
	return hub.Request{}
}

// resyncReason is the reason a stream from req ends with, or
// REASON_UNSPECIFIED when it is served; commits are what it delivered.
func resyncReason(t *testing.T, h *hub.Hub, req hub.Request) (ringcastv1.Reason, []uint64) {
	t.Helper()
	commits, msgs := run(t, h, req)
	return msgs[len(msgs)-1].GetResyncRequired().GetReason(), commits
}

// TestARestoredOlderCopyCannotCarryACursorOntoOtherCommits: the embedded
// store's data directory is copied (stopped) at head 20; commits 21–30
// follow; the copy is put back. Served under the same epoch, the restored
// store gives seqs 21–30 again to other commits, yet no held cursor is
// carried onto them: cursors at 25 and 30 are from the future
// (CURSOR_AHEAD, logged at Warn) until the new commits take those seqs,
// and then from another log (COMMIT_MISMATCH, by their fingerprints); a
// cursor at 20, a commit both copies share, resumes. Every commit keeps its
// fingerprint across a restart. Started with Recover, the restored store
// is served under a new epoch.
func TestARestoredOlderCopyCannotCarryACursorOntoOtherCommits(t *testing.T) {
	dir, backup := t.TempDir(), t.TempDir()
	var c20, c25, c30 hub.Request
	var epoch uint64
	stop := func(h *hub.Hub, ns interface{ Shutdown() }, nc interface{ Close() }) {
		h.Drain()
		h.Close()
		nc.Close()
		ns.Shutdown()
	}
	{
		ns, nc := embedded(t, dir)
		h := newHub(t, openLog(t, nc, natslog.Options{}), 64)
		for i := 1; i <= 20; i++ {
			publish(t, h, fmt.Sprintf("k%d", i), markedFact(i))
		}
		c20, epoch = cursorAt(t, h, 20), h.Epoch()
		stop(h, ns, nc)
		ns.WaitForShutdown()
	}
	if err := os.CopyFS(backup, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	{
		ns, nc := embedded(t, dir)
		h := newHub(t, openLog(t, nc, natslog.Options{}), 64)
		if again := cursorAt(t, h, 20); again.SinceFingerprint != c20.SinceFingerprint {
			t.Fatalf("after a restart commit 20 is %+v, before %+v: the fingerprint changed", again, c20)
		}
		for i := 21; i <= 30; i++ {
			publish(t, h, fmt.Sprintf("k%d", i), markedFact(i))
		}
		c25, c30 = cursorAt(t, h, 25), cursorAt(t, h, 30)
		stop(h, ns, nc)
		ns.WaitForShutdown()
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	{
		var logs logbuf.Buffer
		ns, nc := embedded(t, dir)
		l := openLog(t, nc, natslog.Options{})
		if l.Epoch() != epoch {
			t.Skipf("the restored copy is served under another epoch (%x, was %x): nothing left for fingerprints to catch", l.Epoch(), epoch)
		}
		h, err := hub.New(hub.Config{Log: l, Window: 64, Lease: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []hub.Request{c25, c30} {
			if r, commits := resyncReason(t, h, c); r != ringcastv1.Reason_REASON_CURSOR_AHEAD || len(commits) != 0 {
				t.Fatalf("cursor %d on the restored head 20: %v, commits %v; want CURSOR_AHEAD", c.SinceSeq, r, commits)
			}
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "a cursor from the future") {
			t.Fatalf("no warning of a cursor from the future; log:\n%s", logs.String())
		}
		for i := 21; i <= 30; i++ {
			publish(t, h, "", markedFact(100+i)) // other commits take seqs 21–30 again
		}
		for _, c := range []hub.Request{c25, c30} {
			if r, commits := resyncReason(t, h, c); r != ringcastv1.Reason_REASON_COMMIT_MISMATCH || len(commits) != 0 {
				t.Fatalf("cursor %d after its seq was given to another commit: %v, commits %v; want COMMIT_MISMATCH", c.SinceSeq, r, commits)
			}
		}
		if r, commits := resyncReason(t, h, c20); r != ringcastv1.Reason_REASON_UNSPECIFIED || len(commits) != 10 || commits[0] != 21 {
			t.Fatalf("cursor 20 (a commit both copies hold): %v, commits %v; want 21–30", r, commits)
		}
		stop(h, ns, nc)
		ns.WaitForShutdown()
	}
	{
		_, nc := embedded(t, dir)
		l := openLog(t, nc, natslog.Options{Recover: true})
		if l.Epoch() == epoch {
			t.Fatalf("--store-recover on a restored copy kept the epoch %x", epoch)
		}
		h := newHub(t, l, 64)
		if r, _ := resyncReason(t, h, c20); r != ringcastv1.Reason_REASON_EPOCH_MISMATCH {
			t.Fatalf("cursor 20 of the old epoch after the recovery: %v, want EPOCH_MISMATCH", r)
		}
		h.Close()
	}
}
