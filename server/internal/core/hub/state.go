package hub

import (
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// stateTable keeps, for every fact key seen since boot, the latest fact with
// that key: the source of SNAPSHOT_LATEST_PER_KEY.
//
// Entries form a list ordered by last update (seq, then fact index), so a
// snapshot is a walk from front to back, already in seq order. Past the key
// limit or the byte limit (what the facts and their entries hold on the
// heap, see factCost; the table may hold a fact long after the ring dropped
// it), the least recently updated keys are
// evicted (counted in evicted, which every LATEST_PER_KEY snapshot reports
// in its CaughtUp): a snapshot then lacks keys that have not been updated
// for the longest time. The most recently updated key is always kept.
//
// stateTable does no locking: Hub.mu guards it.
type stateTable struct {
	limit    int
	maxBytes int64
	bytes    int64
	byKey    map[string]*stateEntry
	front    *stateEntry // least recently updated
	back     *stateEntry // most recently updated
	evicted  uint64
}

type stateEntry struct {
	key        string
	seq        uint64
	at         time.Time
	factCount  uint32
	fp         uint32 // the commit's fingerprint
	size       int64
	fact       *ringcastv1.Fact // shared with the ring's event: read-only
	prev, next *stateEntry
}

func newStateTable(limit int, maxBytes int64) *stateTable {
	return &stateTable{limit: limit, maxBytes: maxBytes, byKey: make(map[string]*stateEntry)}
}

// apply records the keyed facts of a commit; call it in seq order.
func (t *stateTable) apply(ev *Event) {
	c := ev.Commit()
	for _, f := range c.GetFacts() {
		if f.GetKey() == "" {
			continue
		}
		e := t.byKey[f.Key]
		if e != nil {
			t.unlink(e)
			t.bytes -= e.size
		} else {
			e = &stateEntry{key: f.Key}
			t.byKey[f.Key] = e
		}
		e.seq, e.at, e.factCount, e.fp, e.fact = ev.Seq, ev.Time, c.FactCount, ev.Fingerprint(), f
		e.size = int64(stateEntryObj + factCost(f))
		t.bytes += e.size
		t.pushBack(e)
		for t.front != e && (len(t.byKey) > t.limit || t.bytes > t.maxBytes) {
			t.evictFront()
		}
	}
}

func (t *stateTable) evictFront() {
	old := t.front
	t.unlink(old)
	delete(t.byKey, old.key)
	t.bytes -= old.size
	t.evicted++
}

func (t *stateTable) unlink(e *stateEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.front = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.back = e.prev
	}
	e.prev, e.next = nil, nil
}

func (t *stateTable) pushBack(e *stateEntry) {
	e.prev = t.back
	if t.back != nil {
		t.back.next = e
	} else {
		t.front = e
	}
	t.back = e
}

// snapshotFact is one still-current fact, copied out of the table.
type snapshotFact struct {
	seq       uint64
	at        time.Time
	factCount uint32
	fp        uint32
	fact      *ringcastv1.Fact
}

// collect appends the current facts accepted by keep, in (seq, index) order.
func (t *stateTable) collect(dst []snapshotFact, keep func(topic string) bool) []snapshotFact {
	for e := t.front; e != nil; e = e.next {
		if keep(e.fact.GetTopic()) {
			dst = append(dst, snapshotFact{seq: e.seq, at: e.at, factCount: e.factCount, fp: e.fp, fact: e.fact})
		}
	}
	return dst
}
