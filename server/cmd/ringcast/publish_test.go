package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// sinkFunc adapts a function to hub.Sink.
type sinkFunc func(*ringcastv1.SubscribeEventsResponse) error

func (f sinkFunc) Send(r *ringcastv1.SubscribeEventsResponse) error { return f(r) }

// committedKeys reads the commits after seq from h, as their fact keys.
func committedKeys(t *testing.T, h *hub.Hub, after uint64) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got [][]string
	err := h.Subscribe(ctx, hub.Request{SinceSeq: after, Epoch: h.Epoch(), EndAtHead: true}, sinkFunc(func(m *ringcastv1.SubscribeEventsResponse) error {
		if c := m.GetCommit(); c != nil {
			var keys []string
			for _, f := range c.Facts {
				keys = append(keys, f.Key)
			}
			got = append(got, keys)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPublishLinesPublishesOneCommitPerLineInBatches: every line is a
// commit (a fact, an array of facts or a request with its idempotency key),
// published in order with one receipt per line, whatever the batching.
func TestPublishLinesPublishesOneCommitPerLineInBatches(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	_, before := srv.Hub().Bounds()
	stdin := strings.Join([]string{
		`{"topic":"a/b","type":"t","key":"1"}`,
		``,
		`[{"topic":"a/b","type":"t","key":"2"},{"topic":"a/c","type":"t","key":"3"}]`,
		`{"facts":[{"topic":"a/b","type":"t","key":"4"}],"idempotencyKey":"k"}`,
		`{"facts":[{"topic":"a/b","type":"t","key":"4"}],"idempotencyKey":"k"}`,
		`{"topic":"a/b","type":"t","key":"6"}`,
	}, "\n")
	for _, batch := range []string{"1", "2", "256"} {
		t.Run("batch="+batch, func(t *testing.T) {
			_, start := srv.Hub().Bounds()
			var out, errOut bytes.Buffer
			if code := run([]string{"publish", "--server", srv.URL, "--lines", "--batch", batch}, strings.NewReader(stdin), &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			var seqs []uint64
			var dups []bool
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var r struct {
					Seq       uint64
					Duplicate bool
				}
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("receipt line %q: %v", l, err)
				}
				seqs, dups = append(seqs, r.Seq), append(dups, r.Duplicate)
			}
			if len(seqs) != 5 {
				t.Fatalf("%d receipts, want 5: %s", len(seqs), out.String())
			}
			got := committedKeys(t, srv.Hub(), start)
			if batch == "1" {
				// The first run publishes key "k"; later runs get it as a duplicate.
				if dups[2] || !dups[3] || seqs[3] != seqs[2] {
					t.Fatalf("duplicates %v seqs %v: want line 5 a duplicate of line 4", dups, seqs)
				}
				if want := "[[1] [2 3] [4] [6]]"; fmtKeys(got) != want {
					t.Fatalf("commits %s, want %s", fmtKeys(got), want)
				}
			} else if want := "[[1] [2 3] [6]]"; fmtKeys(got) != want {
				t.Fatalf("commits %s, want %s (key k already used)", fmtKeys(got), want)
			}
		})
	}
	if _, head := srv.Hub().Bounds(); head != before+4+3+3 {
		t.Fatalf("head %d, want %d", head, before+10)
	}
}

// TestPublishLinesStopsAtABadLine: the lines before a bad one are
// published, nothing after it, and the error names the line.
func TestPublishLinesStopsAtABadLine(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	_, before := srv.Hub().Bounds()
	stdin := "{\"topic\":\"a/b\",\"type\":\"t\",\"key\":\"1\"}\n{\"topic\":\"a/b\",\"type\":\"t\",\"key\":\"2\"}\n{not json\n{\"topic\":\"a/b\",\"type\":\"t\",\"key\":\"4\"}\n"
	var out, errOut bytes.Buffer
	if code := run([]string{"publish", "--server", srv.URL, "--lines"}, strings.NewReader(stdin), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "line 3") {
		t.Fatalf("exit %d, stderr %q: want 1 naming line 3", code, errOut.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("%d receipts, want 2: %s", n, out.String())
	}
	if got := fmtKeys(committedKeys(t, srv.Hub(), before)); got != "[[1] [2]]" {
		t.Fatalf("commits %s, want [[1] [2]]", got)
	}
	// A line the server rejects: its batch is not published.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"publish", "--server", srv.URL, "--lines"}, strings.NewReader(`{"topic":"A/B","type":"t"}`+"\n"), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "lines 1..1") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if _, head := srv.Hub().Bounds(); head != before+2 {
		t.Fatalf("head %d, want %d", head, before+2)
	}
}

func fmtKeys(k [][]string) string {
	parts := make([]string, len(k))
	for i, c := range k {
		parts[i] = "[" + strings.Join(c, " ") + "]"
	}
	return "[" + strings.Join(parts, " ") + "]"
}
