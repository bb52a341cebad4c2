package hexword

import "testing"

// TestRoundTrip: every value formats to digits characters and parses back;
// the text is strict (length, case, characters).
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		v      uint64
		digits int
		text   string
	}{{0, 8, "00000000"}, {0xdeadbeef, 8, "deadbeef"}, {1, 16, "0000000000000001"}, {1<<64 - 1, 16, "ffffffffffffffff"}} {
		if got := string(Append(nil, c.v, c.digits)); got != c.text {
			t.Errorf("Append(%x, %d) = %q, want %q", c.v, c.digits, got, c.text)
		}
		if v, ok := Parse(c.text, c.digits); !ok || v != c.v {
			t.Errorf("Parse(%q) = %x %v, want %x", c.text, v, ok, c.v)
		}
	}
	for _, s := range []string{"DEADBEEF", "deadbee", "deadbeef0", "deadbeeg", " eadbeef", "+eadbeef"} {
		if _, ok := Parse(s, 8); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}
