package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// publishCommits publishes commits of the given sizes; fact keys are
// "c<commit>-f<index>". Commit 3's last fact carries binary data.
func publishCommits(t *testing.T, h *hub.Hub, sizes ...int) []string {
	t.Helper()
	var keys []string
	for c, n := range sizes {
		facts := make([]*ringcastv1.Fact, n)
		for i := range facts {
			key := fmt.Sprintf("c%d-f%d", c+1, i)
			keys = append(keys, key)
			f := &ringcastv1.Fact{Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: key}
			if c == 2 && i == n-1 {
				f.Payload = &ringcastv1.Fact_BinaryData{BinaryData: []byte{0xde, 0xad}}
				f.ContentType = "application/octet-stream"
			} else {
				data, _ := structpb.NewStruct(map[string]any{"level_m": 1.5})
				f.Payload = &ringcastv1.Fact_Data{Data: data}
			}
			facts[i] = f
		}
		if _, err := h.Publish(facts, ""); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// runTail runs "ringcast tail args…" in-process and returns its stdout
// lines, each decoded.
func runTail(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"tail"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("ringcast tail %v: exit %d: %s", args, code, stderr.String())
	}
	return decodeLines(t, stdout.String())
}

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		if _, isSignal := m["signal"]; isSignal {
			if _, ok := m["topic"]; ok {
				t.Errorf("signal line has a topic: %s", l)
			}
			if _, ok := m["type"]; ok {
				t.Errorf("signal line has a type: %s", l)
			}
		} else {
			for _, k := range []string{"seq", "index", "last", "topic", "type", "key"} {
				if _, ok := m[k]; !ok {
					t.Errorf("fact line lacks %q: %s", k, l)
				}
			}
		}
		lines = append(lines, m)
	}
	return lines
}

func factKeys(lines []map[string]any) []string {
	var keys []string
	for _, m := range lines {
		if _, isSignal := m["signal"]; !isSignal {
			keys = append(keys, m["key"].(string))
		}
	}
	return keys
}

func TestTailCursorFileRunsJoinExactlyOnce(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			want := publishCommits(t, srv.Hub(), 3, 3, 3, 3, 3) // seq 2..6
			cf := filepath.Join(t.TempDir(), "tail.cursor")
			args := []string{"--server", srv.URL, "--protocol", string(p), "--cursor-file", cf, "--count", "4", "--end-at-head"}
			var all []map[string]any
			for run := 1; run <= 4; run++ {
				lines := runTail(t, args...)
				facts := factKeys(lines)
				if wantN := min(4, len(want)-4*(run-1)); len(facts) != wantN {
					t.Fatalf("run %d printed %d facts, want %d", run, len(facts), wantN)
				}
				all = append(all, lines...)
			}
			if got := factKeys(all); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("joined runs printed\n%v\nwant\n%v", got, want)
			}
			// The first run stopped inside commit 2 (after its first fact).
			cur, err := ringcast.LoadCursor(cf)
			if err != nil {
				t.Fatal(err)
			}
			if cur.Epoch != srv.Hub().Epoch() || cur.Seq != 6 || cur.Fact != 0 || cur.Fingerprint == 0 {
				t.Errorf("final cursor %v, want seq 6 fact 0 of epoch %x, with the commit's fingerprint", cur, srv.Hub().Epoch())
			}
			if text, _ := os.ReadFile(cf); !strings.HasPrefix(string(text), "rc2.") {
				t.Errorf("cursor file %q, want the rc2 form (with the fingerprint)", text)
			}
			last := all[len(all)-1]
			if last["signal"] != "caught_up" || last["head_seq"] != float64(6) {
				t.Errorf("last line %v, want caught_up at 6", last)
			}
			for _, m := range all {
				if _, isSignal := m["signal"]; isSignal {
					continue
				}
				seq, idx := m["seq"].(float64), m["index"].(float64)
				if wantLast := idx == 2; m["last"] != wantLast {
					t.Errorf("fact %v/%v: last=%v, want %v", seq, idx, m["last"], wantLast)
				}
				if m["key"] == "c3-f2" {
					if m["binary_data"] != "3q0=" || m["content_type"] != "application/octet-stream" || m["data"] != nil {
						t.Errorf("binary fact line %v", m)
					}
				} else if d, ok := m["data"].(map[string]any); !ok || d["level_m"] != 1.5 {
					t.Errorf("fact line data %v", m["data"])
				}
			}
		})
	}
}

func TestTailPrintsResyncBeforeSnapshot(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	want := publishCommits(t, srv.Hub(), 2)
	cf := filepath.Join(t.TempDir(), "tail.cursor")
	// A cursor from another instance.
	if err := ringcast.SaveCursor(cf, ringcast.Cursor{Epoch: srv.Hub().Epoch() ^ 1, Seq: 40}); err != nil {
		t.Fatal(err)
	}
	lines := runTail(t, "--server", srv.URL, "--cursor-file", cf, "--end-at-head")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want resynced, 2 facts, caught_up: %v", len(lines), lines)
	}
	r := lines[0]
	if r["signal"] != "resynced" || r["reason"] != "epoch_mismatch" || r["requested_seq"] != float64(40) || r["head_seq"] != float64(2) || r["oldest_seq"] != float64(1) {
		t.Errorf("first line %v, want resynced epoch_mismatch requested 40, oldest 1, head 2", r)
	}
	if got := factKeys(lines); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("facts %v, want %v", got, want)
	}
}

// TestTailCursorFileFromAnotherLogResyncs: a cursor file whose epoch and
// seq are the server's but whose fingerprint names another commit (a file
// kept across a restore of the store) is answered with a resync line,
// reason commit_mismatch, and the snapshot; the file then holds the
// server's own cursor.
func TestTailCursorFileFromAnotherLogResyncs(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	want := publishCommits(t, srv.Hub(), 2)
	cf := filepath.Join(t.TempDir(), "tail.cursor")
	if err := ringcast.SaveCursor(cf, ringcast.Cursor{Epoch: srv.Hub().Epoch(), Seq: 2, Fingerprint: 0xdeadbeef}); err != nil {
		t.Fatal(err)
	}
	lines := runTail(t, "--server", srv.URL, "--cursor-file", cf, "--end-at-head")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want resynced, 2 facts, caught_up: %v", len(lines), lines)
	}
	if r := lines[0]; r["signal"] != "resynced" || r["reason"] != "commit_mismatch" || r["requested_seq"] != float64(2) {
		t.Errorf("first line %v, want resynced commit_mismatch requested 2", r)
	}
	if got := factKeys(lines); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("facts %v, want %v", got, want)
	}
	if cur, err := ringcast.LoadCursor(cf); err != nil || cur.Seq != 2 || cur.Fingerprint == 0 || cur.Fingerprint == 0xdeadbeef {
		t.Errorf("cursor file after the resync: %v, %v; want seq 2 with the server's fingerprint", cur, err)
	}
}

// cancelAfter is a stdout that cancels a context once n lines are written.
type cancelAfter struct {
	bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if w.n -= bytes.Count(p, []byte("\n")); w.n <= 0 {
		w.cancel()
	}
	return n, err
}

func TestTailStopsBetweenLinesOnSignal(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	want := publishCommits(t, srv.Hub(), 3, 3)
	cf := filepath.Join(t.TempDir(), "tail.cursor")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelAfter{n: 2, cancel: cancel} // SIGINT arrives while line 2 is written
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- tailCmd(ctx, []string{"--server", srv.URL, "--cursor-file", cf}, out, &stderr) }()
	if err := ringtest.Wait(t, done, 10*time.Second, "tail to stop after the signal"); err != nil {
		t.Fatalf("tail returned %v (stderr %s), want nil (exit 0)", err, stderr.String())
	}
	first := decodeLines(t, out.String())
	if got := factKeys(first); strings.Join(got, " ") != strings.Join(want[:2], " ") {
		t.Fatalf("printed %v, want exactly the first two facts", got)
	}
	rest := runTail(t, "--server", srv.URL, "--cursor-file", cf, "--end-at-head")
	if got := factKeys(rest); strings.Join(got, " ") != strings.Join(want[2:], " ") {
		t.Errorf("the next run printed %v, want %v", got, want[2:])
	}
}

func TestTailFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--snapshot", "bogus"},
		{"--protocol", "carrier-pigeon"},
		{"--count", "-1"},
		{"extra-arg"},
		{"--no-such-flag"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"tail", "--server", "http://127.0.0.1:1"}, args...), strings.NewReader(""), &stdout, &stderr); code == 0 {
			t.Errorf("tail %v: exit 0, want an error", args)
		}
		if stdout.Len() > 0 {
			t.Errorf("tail %v printed %q", args, stdout.String())
		}
	}
	// A malformed cursor file is an error, never a silent fresh start.
	cf := filepath.Join(t.TempDir(), "bad.cursor")
	if err := os.WriteFile(cf, []byte("rc1.nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"tail", "--server", "http://127.0.0.1:1", "--cursor-file", cf}, strings.NewReader(""), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "malformed") {
		t.Errorf("bad cursor file: exit %d, stderr %q", code, stderr.String())
	}
}
