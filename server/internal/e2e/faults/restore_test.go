package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

// TestRestoredOlderCopyWhileConsumersHoldCursors: with the embedded store,
// consumers on every face (Connect, gRPC and gRPC-Web with the Go client,
// SSE by Last-Event-ID) follow while commits flow. The server stops, its
// data directory is copied, more commits follow and every consumer
// follows them; the server stops again and the older copy is put back —
// a volume-snapshot restore — and the server starts on it without
// --store-recover: under the same epoch, it gives the seqs after the copy
// again to other commits. Every consumer holds a cursor past the copy, and
// every one resyncs: none is carried onto the other commits. Consumers that
// reconnect at once come back with cursors from the future (CURSOR_AHEAD,
// logged at Warn) or, if the new commits already took their seq, from
// another log (COMMIT_MISMATCH); consumers held off (the proxy stalls
// their requests) until other commits took every seq they had reach the
// server with cursors from another log: COMMIT_MISMATCH, by the
// fingerprints. The history check proves, per log, nothing lost and
// nothing repeated.
func TestRestoredOlderCopyWhileConsumersHoldCursors(t *testing.T) {
	for _, held := range []bool{false, true} {
		name := "reconnect at once"
		if held {
			name = "reconnect after the seqs were given again"
		}
		t.Run(name, func(t *testing.T) { restoreOlderCopy(t, held) })
	}
}

func restoreOlderCopy(t *testing.T, held bool) {
	dir, backup := t.TempDir(), t.TempDir()
	r := newRun(t, "", faultproxy.Seed(t), "--store", "embedded", "--data-dir", dir)
	r.consume(3, 0) // Connect, gRPC, gRPC-Web
	r.consumeSSE()
	r.publish(3 * time.Millisecond)
	r.awaitPublished(30)
	r.stopPub()
	r.pubWG.Wait()
	if !r.settle() {
		t.Fatal("ringcast serve ended before the copy")
	}

	// The stopped copy.
	r.srv.stop(syscall.SIGTERM)
	if err := os.CopyFS(backup, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	r.pubMu.Lock()
	epoch, copied := r.last.epoch, maps(r.receipts[r.last.epoch])
	r.pubMu.Unlock()
	r.srv.start()
	r.publish(3 * time.Millisecond)
	r.awaitPublished(30)
	r.stopPub()
	r.pubWG.Wait()
	if !r.settle() {
		t.Fatal("ringcast serve ended before the restore")
	}
	r.pubMu.Lock()
	head := r.last.seq // every consumer holds a cursor here, past the copy
	r.pubMu.Unlock()

	// The restore, served without --store-recover.
	r.srv.stop(syscall.SIGTERM)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	if held {
		r.proxy.Stall(faultproxy.Up, 10*time.Minute) // until Resume
	}
	r.pubMu.Lock()
	r.restored.Store(epoch)
	r.pubRestored = true
	r.receipts[restoredLog(epoch)] = maps(copied)
	for _, seq := range slices.Sorted(keys(copied)) {
		r.hist.Published(restoredLog(epoch), seq, copied[seq]) // the commits the copy holds
	}
	r.srv.start()
	served, commits := r.snapshot()
	if served != epoch {
		r.pubMu.Unlock()
		t.Skipf("the restored copy is served under another epoch (%016x, was %016x): nothing left for the cursors to catch", served, epoch)
	}
	if len(commits) != len(copied) {
		t.Fatalf("the restored store holds %d commits, the copy %d", len(commits), len(copied))
	}
	r.pubMu.Unlock()
	r.publish(3 * time.Millisecond) // other commits take the seqs after the copy again
	r.awaitPublished(int(head) - len(copied) + 10)
	sum := r.finish() // resumes the proxy

	for _, cs := range r.consumers {
		cs.mu.Lock()
		moved := cs.moved
		cs.mu.Unlock()
		switch {
		case held && moved != "REASON_COMMIT_MISMATCH":
			t.Errorf("%s: moved to the restored log by %q; want a resync, COMMIT_MISMATCH", cs.name, moved)
		case !held && moved != "REASON_CURSOR_AHEAD" && moved != "REASON_COMMIT_MISMATCH":
			t.Errorf("%s: moved to the restored log by %q; want a resync, CURSOR_AHEAD or COMMIT_MISMATCH", cs.name, moved)
		}
	}
	r.srv.stop(syscall.SIGTERM)
	if logs := r.srv.logs.String(); strings.Contains(logs, "REASON_CURSOR_AHEAD") && !strings.Contains(logs, "a cursor from the future") {
		t.Errorf("no warning of a cursor from the future; log:\n%s", logs)
	}
	t.Logf("copy at %d, head %d before the restore; %v", len(copied), head, sum)
}

func maps(m map[uint64]int) map[uint64]int {
	out := make(map[uint64]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func keys(m map[uint64]int) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// consumeSSE starts one SSE consumer through the proxy: GET /events, and
// after every end (a lease, a drain, a stopped server) again with the last
// id it received as Last-Event-ID, as EventSource does. Its facts and gaps
// go to the history like the Go consumers'. It stops with the others.
func (r *run) consumeSSE() {
	cs := &consumer{name: "sse", proto: "sse"}
	cs.rec = r.hist.Consumer(cs.name)
	r.consumers = append(r.consumers, cs)
	ctx := r.consumersContext()
	r.wg.Go(func() {
		lastID := ""
		for ctx.Err() == nil {
			var err error
			if lastID, err = r.sseStream(ctx, cs, lastID); err != nil && ctx.Err() == nil {
				r.t.Errorf("%s: %v", cs.name, err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// sseStream reads one /events response from lastID and returns the last id
// it received; an error only for what no server may send.
func (r *run) sseStream(ctx context.Context, cs *consumer, lastID string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.proxy.URL()+"/events", nil)
	if err != nil {
		return lastID, err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return lastID, nil // down: again
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return lastID, nil
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<22)
	var id, name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		case line == "" && name != "":
			if err := r.sseEvent(cs, id, name, data); err != nil {
				return lastID, err
			}
			if id != "" {
				lastID = id
			}
			id, name, data = "", "", ""
		}
	}
	return lastID, nil // cut or ended: resume
}

// sseEvent records one SSE event: a commit's facts, a gap's resync.
func (r *run) sseEvent(cs *consumer, id, name, data string) error {
	var m ringcastv1.SubscribeEventsResponse
	if err := protojson.Unmarshal([]byte(data), &m); err != nil {
		return fmt.Errorf("event %s %s: %v", name, id, err)
	}
	switch name {
	case names.EventCommit:
		ep, seq, fp, err := sse.ParseLastEventID(id)
		if err != nil || fp == 0 {
			return fmt.Errorf("commit id %q: %v, or no fingerprint", id, err)
		}
		epoch := r.logOf(cs, ep, false, "")
		for _, f := range m.GetCommit().GetFacts() {
			cs.rec.Fact(epoch, seq, f.GetIndex())
		}
		cs.mu.Lock()
		cs.at.epoch, cs.at.seq = epoch, seq
		cs.mu.Unlock()
	case names.EventGap:
		g := m.GetGap()
		reason := g.GetReason().String()
		cs.rec.Resynced(r.logOf(cs, m.GetInstanceEpoch(), true, reason), reason, g.GetRequestedSeq(), g.GetOldestSeq(), g.GetHeadSeq())
	}
	return nil
}
