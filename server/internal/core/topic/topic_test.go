package topic

import "testing"

// TestMatch: an entry matches its topic and the topics under it at a "/"
// boundary, nothing else.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		f, t string
		want bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", true},
		{"a/b", "a/bc", false},
		{"a/b", "a", false},
		{"a/b/", "a/b/c", false},
		{"", "", true},
		{"", "/a", true},
		{"", "a", false},
	} {
		if got := Match(tc.f, tc.t); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.f, tc.t, got, tc.want)
		}
	}
	m := Matcher([]string{"x", "a/b"})
	if !m("a/b/c") || !m("x") || m("y") || Matcher(nil)("a") {
		t.Error("Matcher does not match as any of its entries")
	}
}
