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

// TestEntriesAreWhatMatches: Entries yields exactly the prefixes of a topic
// that Match says match it, each once.
func TestEntriesAreWhatMatches(t *testing.T) {
	for _, tp := range []string{"a", "a/b", "a/b/c", "a//b", "/a", "a/", "ab/cd/ef"} {
		got := map[string]int{}
		for e := range Entries(tp) {
			got[e]++
		}
		for i := range len(tp) + 1 {
			p := tp[:i]
			want := 0
			if Match(p, tp) {
				want = 1
			}
			if got[p] != want {
				t.Errorf("Entries(%q) yields %q %d times; Match says %d", tp, p, got[p], want)
			}
		}
	}
}
