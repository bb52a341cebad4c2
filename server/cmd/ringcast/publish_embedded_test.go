package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestPublishLinesOnTheEmbeddedStore: `ringcast publish --lines` against a
// server with --store embedded publishes each batch of lines as one
// JetStream atomic batch: one receipt per line, consecutive seqs, a key
// repeated in the batch answered as a duplicate, and the same lines sent
// again all duplicates but the unkeyed ones.
func TestPublishLinesOnTheEmbeddedStore(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Store = app.Store{Kind: app.StoreEmbedded, DataDir: t.TempDir()}
	srv := ringtest.Start(t, cfg)
	stdin := strings.Join([]string{
		`{"topic":"a/b","type":"t","key":"1"}`,
		`[{"topic":"a/b","type":"t","key":"2"},{"topic":"a/c","type":"t","key":"3"}]`,
		`{"facts":[{"topic":"a/b","type":"t","key":"4"}],"idempotencyKey":"k"}`,
		`{"facts":[{"topic":"a/b","type":"t","key":"4"}],"idempotencyKey":"k"}`,
		`{"topic":"a/b","type":"t","key":"6"}`,
	}, "\n")
	type receipt struct {
		Seq       uint64
		Duplicate bool
	}
	publishLines := func() []receipt {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run([]string{"publish", "--server", srv.URL, "--lines", "--batch", "256"}, strings.NewReader(stdin), &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		var rs []receipt
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r receipt
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("receipt line %q: %v", l, err)
			}
			rs = append(rs, r)
		}
		if len(rs) != 5 {
			t.Fatalf("%d receipts, want 5: %s", len(rs), out.String())
		}
		return rs
	}
	rs := publishLines()
	want := []receipt{{1, false}, {2, false}, {3, false}, {3, true}, {4, false}}
	for i := range want {
		if rs[i] != want[i] {
			t.Fatalf("receipts %v, want %v", rs, want)
		}
	}
	if got := fmtKeys(committedKeys(t, srv.Hub(), 0)); got != "[[1] [2 3] [4] [6]]" {
		t.Fatalf("commits %s", got)
	}
	rs = publishLines()
	want = []receipt{{5, false}, {6, false}, {3, true}, {3, true}, {7, false}}
	for i := range want {
		if rs[i] != want[i] {
			t.Fatalf("again: receipts %v, want %v", rs, want)
		}
	}
}
