package epoch

import (
	"fmt"
	"testing"
)

// TestFormat: an epoch is 16 lower-case hex digits, zero-padded.
func TestFormat(t *testing.T) {
	for _, e := range []uint64{0, 1, 0xf, 0x10, 0xdeadbeef, 1 << 63, 0x0123456789abcdef, ^uint64(0)} {
		if got, want := Format(e), fmt.Sprintf("%016x", e); got != want {
			t.Errorf("Format(%#x) = %q, want %q", e, got, want)
		}
		if got, ok := Parse(Format(e)); !ok || got != e {
			t.Errorf("Parse(Format(%#x)) = %#x, %v", e, got, ok)
		}
	}
}

// TestParseIsStrict: only the text form Format writes parses.
func TestParseIsStrict(t *testing.T) {
	for _, s := range []string{"", "0", "000000000000000", "00000000000000000", "000000000000000A", "000000000000000g", "-00000000000000f", "+00000000000000f", " 00000000000000f"} {
		if e, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %#x, want a refusal", s, e)
		}
	}
}

// TestNew: a drawn epoch is never zero.
func TestNew(t *testing.T) {
	for range 100 {
		e, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if e == 0 {
			t.Fatal("New drew epoch 0")
		}
	}
}
