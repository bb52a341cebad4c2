package hub

import (
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

func keyed(seq uint64, keys ...string) *Event {
	facts := make([]*ringcastv1.Fact, len(keys))
	for i, k := range keys {
		facts[i] = &ringcastv1.Fact{Index: uint32(i), Topic: "t/" + k, Type: "x", Key: k}
	}
	return newCommitEvent(1, seq, time.Unix(int64(seq), 0), facts)
}

func TestStateTableKeepsLatestPerKeyInSeqOrderAndEvictsLeastRecent(t *testing.T) {
	st := newStateTable(3)
	st.apply(keyed(1, "a", "b", ""))
	st.apply(keyed(2, "c"))
	st.apply(keyed(3, "a", "a")) // the later fact of one commit wins
	got := st.collect(nil, func(string) bool { return true })
	want := []struct {
		key   string
		seq   uint64
		index uint32
	}{{"b", 1, 1}, {"c", 2, 0}, {"a", 3, 1}}
	if len(got) != len(want) {
		t.Fatalf("collected %d facts, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].fact.Key != w.key || got[i].seq != w.seq || got[i].fact.Index != w.index {
			t.Fatalf("entry %d = %s@%d[%d], want %s@%d[%d]", i, got[i].fact.Key, got[i].seq, got[i].fact.Index, w.key, w.seq, w.index)
		}
	}
	st.apply(keyed(4, "d")) // at the limit: b (least recently updated) goes
	if st.evicted != 1 {
		t.Fatalf("evicted = %d, want 1", st.evicted)
	}
	got = st.collect(nil, func(topic string) bool { return topic != "t/c" })
	if len(got) != 2 || got[0].fact.Key != "a" || got[1].fact.Key != "d" {
		t.Fatalf("after eviction and filter: %v", got)
	}
}

func TestDedupeForgetsAfterWindowAndBeyondLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 2)
	d.put("a", Receipt{Seq: 1}, now)
	d.put("b", Receipt{Seq: 2}, now.Add(time.Second))
	if r, ok := d.get("a", now.Add(30*time.Second)); !ok || r.Seq != 1 {
		t.Fatalf("a within the window: %v %v", r, ok)
	}
	d.put("c", Receipt{Seq: 3}, now.Add(2*time.Second)) // over the limit: a (oldest) goes
	if _, ok := d.get("a", now.Add(3*time.Second)); ok {
		t.Fatal("a survived the key limit")
	}
	if _, ok := d.get("b", now.Add(61*time.Second)); ok {
		t.Fatal("b survived its window")
	}
	if r, ok := d.get("c", now.Add(61*time.Second)); !ok || r.Seq != 3 {
		t.Fatalf("c within its window: %v %v", r, ok)
	}
}
