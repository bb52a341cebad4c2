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
	return newCommitEvent(1, seq, time.Unix(int64(seq), 0), facts, "")
}

func TestStateTableKeepsLatestPerKeyInSeqOrderAndEvictsLeastRecent(t *testing.T) {
	st := newStateTable(3, 1<<30)
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
	d := newDedupe(time.Minute, 2, -1)
	d.put("", "a", Receipt{Seq: 1}, Digest{}, nil, now)
	d.put("", "b", Receipt{Seq: 2}, Digest{}, nil, now.Add(time.Second))
	if r, ok := d.getReceipt("a", now.Add(30*time.Second)); !ok || r.Seq != 1 {
		t.Fatalf("a within the window: %v %v", r, ok)
	}
	d.put("", "c", Receipt{Seq: 3}, Digest{}, nil, now.Add(2*time.Second)) // over the limit: a (oldest) goes
	if _, ok := d.getReceipt("a", now.Add(3*time.Second)); ok {
		t.Fatal("a survived the key limit")
	}
	if _, ok := d.getReceipt("b", now.Add(61*time.Second)); ok {
		t.Fatal("b survived its window")
	}
	if r, ok := d.getReceipt("c", now.Add(61*time.Second)); !ok || r.Seq != 3 {
		t.Fatalf("c within its window: %v %v", r, ok)
	}
}

// TestStateTableEvictsLeastRecentlyUpdatedByBytes: past the byte bound the
// least recently updated keys go (counted), the table's bytes are the sum
// of its facts, and the newest key is kept even when over the bound alone.
func TestStateTableEvictsLeastRecentlyUpdatedByBytes(t *testing.T) {
	big := func(seq uint64, key string, n int) *Event {
		f := &ringcastv1.Fact{Topic: "t", Type: "x", Key: key, Payload: &ringcastv1.Fact_BinaryData{BinaryData: make([]byte, n)}}
		return newCommitEvent(1, seq, time.Unix(int64(seq), 0), []*ringcastv1.Fact{f}, "")
	}
	st := newStateTable(1000, 4200) // three facts of ~1.3 KB on the heap
	st.apply(big(1, "a", 1000))
	st.apply(big(2, "b", 1000))
	st.apply(big(3, "c", 1000))
	st.apply(big(4, "a", 1000)) // a updated: b is now the least recent
	st.apply(big(5, "d", 1000)) // over 4200: b goes
	keys := func() (ks []string) {
		for _, f := range st.collect(nil, func(string) bool { return true }) {
			ks = append(ks, f.fact.Key)
		}
		return ks
	}
	if got := keys(); len(got) != 3 || got[0] != "c" || got[1] != "a" || got[2] != "d" || st.evicted != 1 {
		t.Fatalf("keys %v evicted %d, want [c a d] and 1", got, st.evicted)
	}
	var sum int64
	for _, e := range st.byKey {
		sum += e.size
	}
	if st.bytes != sum || st.bytes > 4200 {
		t.Fatalf("bytes %d, facts sum to %d", st.bytes, sum)
	}
	st.apply(big(6, "e", 10_000))
	if got := keys(); len(got) != 1 || got[0] != "e" || st.evicted != 4 {
		t.Fatalf("after a fact over the bound: %v evicted %d", got, st.evicted)
	}
}
