package hub

import (
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// stateTable keeps, for every fact key seen since boot, the latest fact with
// that key: the source of SNAPSHOT_LATEST_PER_KEY.
//
// Entries form a list ordered by last update (seq, then fact index), so a
// snapshot is a walk from front to back, already in seq order. At the key
// limit the least recently updated key is evicted (counted in evicted): a
// snapshot then lacks keys that have not been updated for the longest time.
//
// stateTable does no locking: Hub.mu guards it.
type stateTable struct {
	limit   int
	byKey   map[string]*stateEntry
	front   *stateEntry // least recently updated
	back    *stateEntry // most recently updated
	evicted uint64
}

type stateEntry struct {
	key        string
	seq        uint64
	at         time.Time
	factCount  uint32
	fact       *ringcastv1.Fact // shared with the ring's event: read-only
	prev, next *stateEntry
}

func newStateTable(limit int) *stateTable {
	return &stateTable{limit: limit, byKey: make(map[string]*stateEntry)}
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
		} else {
			if len(t.byKey) >= t.limit {
				old := t.front
				t.unlink(old)
				delete(t.byKey, old.key)
				t.evicted++
			}
			e = &stateEntry{key: f.Key}
			t.byKey[f.Key] = e
		}
		e.seq, e.at, e.factCount, e.fact = ev.Seq, ev.Time, c.FactCount, f
		t.pushBack(e)
	}
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
	fact      *ringcastv1.Fact
}

// collect appends the current facts accepted by keep, in (seq, index) order.
func (t *stateTable) collect(dst []snapshotFact, keep func(topic string) bool) []snapshotFact {
	for e := t.front; e != nil; e = e.next {
		if keep(e.fact.GetTopic()) {
			dst = append(dst, snapshotFact{seq: e.seq, at: e.at, factCount: e.factCount, fact: e.fact})
		}
	}
	return dst
}
