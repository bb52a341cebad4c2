package ringcast_test

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

// TestCursorTextAsShared runs clients/conformance/cursors.json, the cursor
// strings the TypeScript and Python clients parse the same way: each valid
// one to its fields and back to itself, each invalid one refused with
// ErrMalformedCursor.
func TestCursorTextAsShared(t *testing.T) {
	raw, err := os.ReadFile("../../conformance/cursors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Valid []struct {
			Text        string `json:"text"`
			Epoch       string `json:"epoch"`
			Seq         string `json:"seq"`
			Fact        uint32 `json:"fact"`
			Fingerprint uint32 `json:"fingerprint"`
		} `json:"valid"`
		Invalid []struct {
			Text string `json:"text"`
			Why  string `json:"why"`
		} `json:"invalid"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Valid) == 0 || len(file.Invalid) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range file.Valid {
		epoch, err1 := strconv.ParseUint(c.Epoch, 10, 64)
		seq, err2 := strconv.ParseUint(c.Seq, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: bad expected fields: %v %v", c.Text, err1, err2)
		}
		want := ringcast.Cursor{Epoch: epoch, Seq: seq, Fact: c.Fact, Fingerprint: c.Fingerprint}
		got, err := ringcast.ParseCursor(c.Text)
		if err != nil {
			t.Errorf("%q: %v", c.Text, err)
			continue
		}
		if got != want {
			t.Errorf("%q parses to %+v, want %+v", c.Text, got, want)
		}
		if s := got.String(); s != c.Text {
			t.Errorf("%q writes back as %q", c.Text, s)
		}
	}
	for _, c := range file.Invalid {
		if got, err := ringcast.ParseCursor(c.Text); !errors.Is(err, ringcast.ErrMalformedCursor) {
			t.Errorf("%q (%s): parsed to %+v, %v; want ErrMalformedCursor", c.Text, c.Why, got, err)
		}
	}
}
