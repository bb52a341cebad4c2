package hub

import (
	"fmt"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

func TestEvictedTopicsMatchesLikeTheFilter(t *testing.T) {
	var x evictedTopics
	x.note(newCommitEvent(1, 5, time.Now(), []*ringcastv1.Fact{{Topic: "gauges/ribble/g-14"}, {Topic: "a"}}, ""))
	for _, c := range []struct {
		topics []string
		from   uint64
		want   bool
	}{
		{[]string{"gauges/ribble"}, 5, true},
		{[]string{"gauges"}, 5, true},
		{[]string{"gauges/ribble/g-14"}, 5, true},
		{[]string{"gauges/ribble"}, 6, false},
		{[]string{"gauges/rib"}, 1, false},
		{[]string{"gauges/ribblesdale"}, 1, false},
		{[]string{"gauges/ribble/g-1"}, 1, false},
		{[]string{"x", "a"}, 5, true},
		{[]string{"x", "a/b"}, 1, false},
	} {
		if got := x.missed(c.topics, c.from); got != c.want {
			t.Errorf("missed(%v, from %d) = %v, want %v", c.topics, c.from, got, c.want)
		}
	}
}

func TestEvictedStatusEventsPassEveryFilter(t *testing.T) {
	var x evictedTopics
	x.note(newStatusEvent(1, 7, time.Now(), &ringcastv1.ServerStatus{}))
	if !x.missed([]string{"anything"}, 7) || x.missed([]string{"anything"}, 8) {
		t.Fatal("an evicted ServerStatus must count as missed by every filter from its seq on")
	}
}

// TestEvictedTopicsStaysBoundedAndConservative: past the bound the oldest
// entries are forgotten; a forgotten topic then counts as evicted at the
// highest forgotten seq, never as not evicted.
func TestEvictedTopicsStaysBoundedAndConservative(t *testing.T) {
	var x evictedTopics
	for seq := uint64(1); seq <= maxEvictedTopics+10; seq++ {
		x.note(newCommitEvent(1, seq, time.Now(), []*ringcastv1.Fact{{Topic: fmt.Sprintf("t%d", seq)}}, ""))
		if len(x.last) > maxEvictedTopics {
			t.Fatalf("%d entries after seq %d, bound %d", len(x.last), seq, maxEvictedTopics)
		}
	}
	if !x.missed([]string{"t1"}, 1) {
		t.Fatal("a forgotten topic reported as never evicted")
	}
	if x.missed([]string{"t1"}, x.forgotten+1) || !x.missed([]string{fmt.Sprint("t", maxEvictedTopics+10)}, maxEvictedTopics+10) {
		t.Fatal("the index lost precision it should keep")
	}
}
