package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// decodeLine decodes one JSON line keeping numbers as json.Number, so a
// test tells a JSON number from a string.
func decodeLine(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return m
}

// TestPublishAndTailPrintSeqAlike: the seq `ringcast publish` (and
// `publish --lines`) prints in its receipt is the JSON number `ringcast
// tail` prints for the fact; the receipt names the epoch both ways (the
// decimal instanceEpoch and the hex epoch, which agree) and says
// "duplicate":false.
func TestPublishAndTailPrintSeqAlike(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	code, out, errOut := runCmd("publish", "--server", srv.URL, `{"topic":"v/a","type":"t","key":"1"}`)
	if code != 0 {
		t.Fatalf("publish: exit %d: %s", code, errOut)
	}
	receipt := decodeLine(t, out)
	seq, ok := receipt["seq"].(json.Number)
	if !ok {
		t.Fatalf("receipt %s: seq is not a JSON number", out)
	}
	if receipt["duplicate"] != false {
		t.Fatalf("receipt %s: want \"duplicate\":false", out)
	}
	dec, _ := receipt["instanceEpoch"].(string)
	e, err := strconv.ParseUint(dec, 10, 64)
	if err != nil || e != srv.Hub().Epoch() || receipt["epoch"] != epoch.Format(e) {
		t.Fatalf("receipt %s: want instanceEpoch %d and epoch %s", out, srv.Hub().Epoch(), epoch.Format(srv.Hub().Epoch()))
	}

	var lout, lerr bytes.Buffer
	if code := run([]string{"publish", "--server", srv.URL, "--lines"}, strings.NewReader(`{"topic":"v/a","type":"t","key":"2"}`+"\n"), &lout, &lerr); code != 0 {
		t.Fatalf("publish --lines: exit %d: %s", code, lerr.String())
	}
	lseq, ok := decodeLine(t, lout.String())["seq"].(json.Number)
	if !ok {
		t.Fatalf("publish --lines receipt %s: seq is not a JSON number", lout.String())
	}

	code, out, errOut = runCmd("tail", "--server", srv.URL, "--topic", "v", "--end-at-head")
	if code != 0 {
		t.Fatalf("tail: exit %d: %s", code, errOut)
	}
	var tailed []json.Number
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if m := decodeLine(t, l); m["topic"] != nil {
			s, ok := m["seq"].(json.Number)
			if !ok {
				t.Fatalf("tail line %s: seq is not a JSON number", l)
			}
			tailed = append(tailed, s)
		}
	}
	if want := []json.Number{seq, lseq}; !slices.Equal(tailed, want) {
		t.Fatalf("tail printed seqs %v, publish %v", tailed, want)
	}
}

// TestStatusShowsTheEpochBothWays: `ringcast status` prints the running
// epoch as Connect JSON's decimal instanceEpoch and, beside it, as the hex
// epoch logs, metrics labels and SSE ids use; seqs are JSON numbers.
func TestStatusShowsTheEpochBothWays(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	code, out, errOut := runCmd("status", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	st, _ := decodeLine(t, out)["status"].(map[string]any)
	e := srv.Hub().Epoch()
	if st["instanceEpoch"] != strconv.FormatUint(e, 10) || st["epoch"] != epoch.Format(e) {
		t.Fatalf("status %s: want instanceEpoch %d and epoch %s", out, e, epoch.Format(e))
	}
	_, head := srv.Hub().Bounds()
	if st["headSeq"] != json.Number(strconv.FormatUint(head, 10)) {
		t.Fatalf("status %s: want headSeq %d as a JSON number", out, head)
	}
}

// TestMarshalJSON: the CLI's rendering of response messages, field by
// field.
func TestMarshalJSON(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	const ep = 7417829060837277239 // 66f16c3abfc67e37
	receipt := &ringcastv1.PublishResponse{Seq: 12, InstanceEpoch: ep, EventTime: at}
	for name, c := range map[string]struct {
		got  func() ([]byte, error)
		want string
	}{
		"outcome not applied": {
			func() ([]byte, error) { return marshalJSON(&ringcastv1.GetPublishOutcomeResponse{RememberedSince: at}) },
			`{"applied":false,"rememberedSince":"2026-12-01T09:00:00Z"}`,
		},
		"outcome applied": {
			func() ([]byte, error) {
				return marshalJSON(&ringcastv1.GetPublishOutcomeResponse{Applied: true, Receipt: receipt, RememberedSince: at})
			},
			`{"applied":true,"receipt":{"seq":12,"instanceEpoch":"7417829060837277239","epoch":"66f16c3abfc67e37","eventTime":"2026-12-01T09:00:00Z","duplicate":false},"rememberedSince":"2026-12-01T09:00:00Z"}`,
		},
		"batch receipts": {
			func() ([]byte, error) {
				return marshalJSON(&ringcastv1.PublishBatchResponse{Receipts: []*ringcastv1.PublishResponse{receipt, {Seq: 1 << 40, InstanceEpoch: 1, Duplicate: true}}})
			},
			`{"receipts":[{"seq":12,"instanceEpoch":"7417829060837277239","epoch":"66f16c3abfc67e37","eventTime":"2026-12-01T09:00:00Z","duplicate":false},{"seq":1099511627776,"instanceEpoch":"1","epoch":"0000000000000001","duplicate":true}]}`,
		},
	} {
		got, err := c.got()
		if err != nil || string(got) != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", name, got, err, c.want)
		}
	}
}
