package ringcast_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

func TestCursorTextRoundTrip(t *testing.T) {
	for _, c := range []ringcast.Cursor{
		{},
		{Epoch: 1, Seq: 1},
		{Epoch: 0x9f86d081884c7d65, Seq: 1042, Fact: 3},
		{Epoch: ^uint64(0), Seq: ^uint64(0), Fact: ^uint32(0)},
	} {
		text, err := c.MarshalText()
		if err != nil {
			t.Fatalf("%+v: MarshalText: %v", c, err)
		}
		if !strings.HasPrefix(string(text), "rc1.") {
			t.Errorf("%+v: text %q lacks the version prefix", c, text)
		}
		var back ringcast.Cursor
		if err := back.UnmarshalText(text); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", text, err)
		}
		if back != c {
			t.Errorf("round trip of %+v gave %+v", c, back)
		}
		if got, err := ringcast.ParseCursor(c.String()); err != nil || got != c {
			t.Errorf("ParseCursor(String()) = %+v, %v; want %+v", got, err, c)
		}
	}
	if got := (ringcast.Cursor{Epoch: 0xab, Seq: 7, Fact: 2}).String(); got != "rc1.00000000000000ab.7.2" {
		t.Errorf("String = %q", got)
	}
}

func TestCursorJSON(t *testing.T) {
	type doc struct {
		Cursor ringcast.Cursor `json:"cursor"`
	}
	in := doc{Cursor: ringcast.Cursor{Epoch: 0xfedcba9876543210, Seq: 1 << 60, Fact: 5}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// The epoch must never be a (lossy) JSON number.
	if want := `{"cursor":"rc1.fedcba9876543210.1152921504606846976.5"}`; string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("JSON round trip gave %+v, want %+v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"cursor":"rc1.x.1.0"}`), &out); !errors.Is(err, ringcast.ErrMalformedCursor) {
		t.Errorf("malformed JSON cursor: err = %v, want ErrMalformedCursor", err)
	}
	if err := json.Unmarshal([]byte(`{"cursor":12}`), &out); err == nil {
		t.Error("a JSON number was accepted as a cursor")
	}
}

func TestParseCursorRejectsMalformed(t *testing.T) {
	for _, s := range []string{
		"",
		"rc1",
		"rc1.0000000000000001.1",
		"rc1.0000000000000001.1.0.0",
		"rc2.0000000000000001.1.0",
		"RC1.0000000000000001.1.0",
		"rc1.1.1.0",                                   // short epoch
		"rc1.00000000000000001.1.0",                   // long epoch
		"rc1.000000000000000G.1.0",                    // not hex
		"rc1.000000000000000A.1.0",                    // upper case
		"rc1.0000000000000001.01.0",                   // leading zero
		"rc1.0000000000000001.+1.0",                   // sign
		"rc1.0000000000000001.-1.0",                   // sign
		"rc1.0000000000000001. 1.0",                   // space
		"rc1.0000000000000001.1.",                     // empty fact
		"rc1.0000000000000001..0",                     // empty seq
		"rc1.0000000000000001.1.4294967296",           // fact overflows uint32
		"rc1.0000000000000001.18446744073709551616.0", // seq overflows uint64
		"rc1.0000000000000000.0.1",                    // fact without seq
		"rc1.0000000000000000.5.0",                    // seq without epoch
		" rc1.0000000000000001.1.0",
		"rc1.0000000000000001.1.0\n",
	} {
		if c, err := ringcast.ParseCursor(s); err == nil {
			t.Errorf("ParseCursor(%q) = %+v, want an error", s, c)
		} else if !errors.Is(err, ringcast.ErrMalformedCursor) {
			t.Errorf("ParseCursor(%q): error %v does not wrap ErrMalformedCursor", s, err)
		}
	}
	if _, err := (ringcast.Cursor{Seq: 3}).MarshalText(); err == nil {
		t.Error("MarshalText accepted a seq without an epoch")
	}
}

// TestCursorWithFingerprint: a cursor with a fingerprint is written rc2
// with 8 hex digits of it, one without stays rc1, and rc2 is parsed as
// strictly as rc1 (docs/protocol.md, "Positions").
func TestCursorWithFingerprint(t *testing.T) {
	c := ringcast.Cursor{Epoch: 0x9f86d081884c7d65, Seq: 1042, Fact: 3, Fingerprint: 0x5d41402a}
	const s = "rc2.9f86d081884c7d65.1042.3.5d41402a"
	if got := c.String(); got != s {
		t.Fatalf("String = %q, want %q", got, s)
	}
	if got, err := ringcast.ParseCursor(s); err != nil || got != c {
		t.Fatalf("ParseCursor(%q) = %+v, %v; want %+v", s, got, err, c)
	}
	if got := (ringcast.Cursor{Epoch: 1, Seq: 2, Fingerprint: 1}).String(); got != "rc2.0000000000000001.2.0.00000001" {
		t.Fatalf("String = %q, want the fingerprint zero-padded", got)
	}
	if got := (ringcast.Cursor{Epoch: 1, Seq: 2}).String(); got != "rc1.0000000000000001.2.0" {
		t.Fatalf("a cursor without a fingerprint is %q, want rc1", got)
	}
	for _, bad := range []string{
		"rc2.9f86d081884c7d65.1042.3",            // no fingerprint
		"rc2.9f86d081884c7d65.1042.3.00000000",   // fingerprint 0: written rc1
		"rc2.9f86d081884c7d65.1042.3.5D41402A",   // upper case
		"rc2.9f86d081884c7d65.1042.3.5d41402",    // 7 digits
		"rc2.9f86d081884c7d65.1042.3.05d41402a",  // 9 digits
		"rc2.9f86d081884c7d65.1042.3.5d41402g",   // not hex
		"rc1.9f86d081884c7d65.1042.3.5d41402a",   // rc1 has none
		"rc2.0000000000000000.0.0.5d41402a",      // fingerprint without seq
		"rc2.9f86d081884c7d65.1042.3.5d41402a.1", // a field too many
	} {
		if c, err := ringcast.ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) = %+v, want an error", bad, c)
		}
	}
	if _, err := (ringcast.Cursor{Fingerprint: 7}).MarshalText(); err == nil {
		t.Error("MarshalText accepted a fingerprint without a seq")
	}
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "rc1.0000000000000000.0.0", "rc2.9f86d081884c7d65.1042.3.5d41402a", "rc1.9f86d081884c7d65.1042.3", "rc1.ffffffffffffffff.18446744073709551615.4294967295", "rc1.0000000000000001.01.0", "rc2.a.b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ringcast.ParseCursor(s)
		if err != nil {
			if !errors.Is(err, ringcast.ErrMalformedCursor) {
				t.Fatalf("error %v does not wrap ErrMalformedCursor", err)
			}
			return
		}
		// Parsing is strict: only the canonical form parses.
		if c.String() != s {
			t.Fatalf("ParseCursor(%q) = %+v, which prints as %q", s, c, c.String())
		}
		if _, err := c.MarshalText(); err != nil {
			t.Fatalf("parsed cursor %+v does not marshal: %v", c, err)
		}
	})
}

func TestSaveLoadCursor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.cursor")
	c, err := ringcast.LoadCursor(path)
	if err != nil || !c.IsZero() {
		t.Fatalf("LoadCursor(missing) = %+v, %v; want the zero cursor", c, err)
	}
	for _, want := range []ringcast.Cursor{{Epoch: 7, Seq: 9, Fact: 1}, {Epoch: 7, Seq: 12}} {
		if err := ringcast.SaveCursor(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := ringcast.LoadCursor(path)
		if err != nil || got != want {
			t.Fatalf("LoadCursor = %+v, %v; want %+v", got, err, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after saves, want only the cursor file (no temp files left)", len(entries))
	}
	if err := os.WriteFile(path, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ringcast.LoadCursor(path); !errors.Is(err, ringcast.ErrMalformedCursor) {
		t.Errorf("LoadCursor(garbage) err = %v, want ErrMalformedCursor", err)
	}
	if err := ringcast.SaveCursor(filepath.Join(dir, "missing-dir", "c"), ringcast.Cursor{}); err == nil {
		t.Error("SaveCursor into a missing directory succeeded")
	}
}
