package main

import (
	"strings"
	"testing"
)

const good = `{"kind":"consumer","consumer":"idle"}
{"kind":"published","epoch":"592d066f7d68b122","seq":2,"facts":2}
{"kind":"fact","consumer":"a","epoch":"592d066f7d68b122","seq":2,"index":0}
{"kind":"restart","consumer":"a"}
{"kind":"fact","consumer":"a","epoch":"592d066f7d68b122","seq":2,"index":1}

{"kind":"published","epoch":"8c01c25dfcf75b03","seq":3,"facts":1}
{"kind":"resync","consumer":"a","epoch":"8c01c25dfcf75b03","reason":"REASON_EPOCH_MISMATCH","requested":2,"oldest":1,"head":3}
{"kind":"fact","consumer":"a","epoch":"8c01c25dfcf75b03","seq":3,"index":0}
`

// TestRead: the lines become the History the Go tests build, so its Check
// passes and fails as theirs does.
func TestRead(t *testing.T) {
	h, err := read(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := h.Check(false)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Consumers != 2 || sum.Facts != 3 || sum.Resyncs != 1 || sum.Restarts != 1 || sum.Commits != 2 {
		t.Errorf("summary %+v", sum)
	}
	if _, err := h.Check(true); err == nil || !strings.Contains(err.Error(), "consumer idle: given nothing") {
		t.Errorf("complete check: %v, want the idle consumer named", err)
	}
	// A fact dropped: the check fails and names it.
	h, err = read(strings.NewReader(strings.Replace(good, `"seq":2,"index":1}`, `"seq":2,"index":0}`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Check(false); err == nil || !strings.Contains(err.Error(), "repeated or out of order") {
		t.Errorf("a repeated fact: %v", err)
	}
}

func TestReadRefusesBadLines(t *testing.T) {
	for _, in := range []string{
		`{"kind":"fact","epoch":"592d066f7d68b122","seq":2}`,
		`{"kind":"fact","consumer":"a","epoch":"592d066f7d68b12","seq":2}`,
		`{"kind":"published","epoch":"zz2d066f7d68b122","seq":2,"facts":1}`,
		`{"kind":"gossip","consumer":"a"}`,
		`{"kind":"fact","consumer":"a","epoch":"592d066f7d68b122","seq":-1}`,
		`{"kind":"fact","consumer":"a","epoch":"592d066f7d68b122","sequence":2}`,
		`not json`,
	} {
		if _, err := read(strings.NewReader("\n" + in + "\n")); err == nil || !strings.HasPrefix(err.Error(), "line 2: ") {
			t.Errorf("%s: %v, want an error naming line 2", in, err)
		}
	}
}
