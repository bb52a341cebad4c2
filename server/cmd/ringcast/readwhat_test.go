package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// runCmd runs "ringcast args…" in-process.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestOutcomePrintsTheResponse(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			r, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "k"}}, "order-17")
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCmd("outcome", "--server", srv.URL, "--protocol", string(p), "order-17")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("output %q: want one line", out)
			}
			var m struct {
				Applied bool `json:"applied"`
				Receipt struct {
					Seq           uint64 `json:"seq"`
					InstanceEpoch string `json:"instanceEpoch"`
					Epoch         string `json:"epoch"`
					EventTime     string `json:"eventTime"`
					Duplicate     bool   `json:"duplicate"`
				} `json:"receipt"`
				RememberedSince string `json:"rememberedSince"`
			}
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			et, _ := time.Parse(time.RFC3339Nano, m.Receipt.EventTime)
			if !m.Applied || m.Receipt.Seq != r.Seq || m.Receipt.InstanceEpoch != strconv.FormatUint(r.Epoch, 10) || m.Receipt.Epoch != epoch.Format(r.Epoch) || !et.Equal(r.Time) || m.Receipt.Duplicate || m.RememberedSince == "" {
				t.Fatalf("output %s, want applied with receipt seq %d epoch %d time %v", out, r.Seq, r.Epoch, r.Time)
			}

			code, out, errOut = runCmd("outcome", "--server", srv.URL, "--protocol", string(p), "never-sent")
			if code != 0 {
				t.Fatalf("unknown key: exit %d: %s", code, errOut)
			}
			var u map[string]any
			if err := json.Unmarshal([]byte(out), &u); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if u["applied"] != false || u["receipt"] != nil || u["rememberedSince"] == nil {
				t.Fatalf("unknown key: %s, want \"applied\":false with rememberedSince", out)
			}
		})
	}
}

func TestOutcomeErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "one non-empty idempotency KEY"},
		{[]string{""}, 2, "one non-empty idempotency KEY"},
		{[]string{"a", "b"}, 2, "one non-empty idempotency KEY"},
		{[]string{"--protocol", "carrier-pigeon", "k"}, 1, "unknown protocol"},
		{[]string{"--server", "http://127.0.0.1:1", "k"}, 1, "ringcast outcome: cannot reach a ringcast server at http://127.0.0.1:1"},
	} {
		args := append([]string{"outcome", "--server", "http://127.0.0.1:1"}, c.args...)
		code, out, errOut := runCmd(args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out, errOut, c.code, c.want)
		}
	}
}

// tail --since-time prints the commits whose event time is at or after the
// time (instead of a snapshot); a time after everything prints only
// caught_up.
func TestTailSinceTime(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			var receipts []time.Time
			var keys []string
			for i := range 4 {
				key := "c" + strconv.Itoa(i+1)
				r, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: key}}, "")
				if err != nil {
					t.Fatal(err)
				}
				receipts, keys = append(receipts, r.Time), append(keys, key)
			}
			at := receipts[2]
			var want []string
			for i, rt := range receipts {
				if !rt.Before(at) {
					want = append(want, keys[i])
				}
			}
			lines := runTail(t, "--server", srv.URL, "--protocol", string(p), "--end-at-head", "--since-time", at.Format(time.RFC3339Nano))
			if got := factKeys(lines); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("--since-time %v printed %v, want %v", at, got, want)
			}
			_, head := srv.Hub().Bounds()
			lines = runTail(t, "--server", srv.URL, "--protocol", string(p), "--end-at-head", "--since-time", "2999-01-01T00:00:00Z")
			if len(lines) != 1 || lines[0]["signal"] != "caught_up" || lines[0]["head_seq"] != float64(head) {
				t.Errorf("--since-time after everything printed %v, want caught_up at %d only", lines, head)
			}
		})
	}
}

// tail --since 15m replays every commit of the last 15 minutes: all of
// them here, each update of one key, where a latest-per-key snapshot would
// print the last only. A cursor file without a position takes the time;
// the next run resumes from the saved cursor.
func TestTailSinceDuration(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	for range 3 {
		if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "same"}}, ""); err != nil {
			t.Fatal(err)
		}
	}
	cf := filepath.Join(t.TempDir(), "tail.cursor")
	lines := runTail(t, "--server", srv.URL, "--end-at-head", "--snapshot", "latest_per_key", "--since", "15m", "--cursor-file", cf)
	if got := factKeys(lines); len(got) != 3 {
		t.Fatalf("--since 15m printed %v, want the 3 updates of the key", lines)
	}
	if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "next"}}, ""); err != nil {
		t.Fatal(err)
	}
	lines = runTail(t, "--server", srv.URL, "--end-at-head", "--cursor-file", cf)
	if got := factKeys(lines); strings.Join(got, " ") != "next" {
		t.Fatalf("the run from the cursor file printed %v, want the new fact only", lines)
	}
}

func TestTailSinceErrors(t *testing.T) {
	cf := filepath.Join(t.TempDir(), "tail.cursor")
	if err := ringcast.SaveCursor(cf, ringcast.Cursor{Epoch: 1, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--since-time", "yesterday"}, "--since-time \"yesterday\": want an RFC 3339 time"},
		{[]string{"--since-time", "2026-12-01 09:00"}, "want an RFC 3339 time"},
		{[]string{"--since-time", "0000-01-01T00:00:00Z"}, "want a year in 0001..9999"},
		{[]string{"--since", "fortnight"}, "--since \"fortnight\": want a positive duration"},
		{[]string{"--since", "-5m"}, "want a positive duration"},
		{[]string{"--since", "0s"}, "want a positive duration"},
		{[]string{"--since", "15m", "--since-time", "2026-12-01T09:00:00Z"}, "use one"},
		{[]string{"--since", "15m", "--cursor-file", cf}, "holds a position"},
		{[]string{"--since-time", "2026-12-01T09:00:00Z", "--cursor-file", cf}, "holds a position"},
	} {
		args := append([]string{"tail", "--server", "http://127.0.0.1:1"}, c.args...)
		code, out, errOut := runCmd(args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, c.want)
		}
	}
}
