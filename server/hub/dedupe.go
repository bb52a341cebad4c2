package hub

import (
	"math"
	"time"
)

// dedupe remembers publish receipts by idempotency key for a window of time,
// holding at most limit keys (the hub refuses new keys while it is full of
// keys still inside their window, see full).
//
// It serves the memory store only: with a Log, the Log deduplicates alone
// (see publishLog), so that every replica answers a key alike.
//
// Entries form a FIFO list by first use; expiry and the limit both trim the
// front. dedupe does no locking: Hub.mu guards it.
type dedupe struct {
	window time.Duration
	limit  int
	byKey  map[string]*dedupeEntry
	front  *dedupeEntry
	back   *dedupeEntry
}

type dedupeEntry struct {
	key     string
	receipt Receipt
	expires time.Time
	next    *dedupeEntry
}

func newDedupe(window time.Duration, limit int) *dedupe {
	return &dedupe{window: window, limit: limit, byKey: make(map[string]*dedupeEntry)}
}

// get returns the receipt recorded for key, if it has not expired.
func (d *dedupe) get(key string, now time.Time) (Receipt, bool) {
	d.trim(now)
	e, ok := d.byKey[key]
	if !ok {
		return Receipt{}, false
	}
	return e.receipt, true
}

// room is how many new keys put can take without forgetting a key still
// inside its window (call get first: it drops the expired ones).
func (d *dedupe) room() int {
	if d.limit <= 0 || d.window <= 0 {
		return math.MaxInt // dedupe off: nothing to forget
	}
	return d.limit - len(d.byKey)
}

// put records a receipt; the key must not be present. At the limit it
// forgets the oldest key: the hub calls room first and refuses instead.
func (d *dedupe) put(key string, r Receipt, now time.Time) {
	if d.limit <= 0 || d.window <= 0 {
		return
	}
	for len(d.byKey) >= d.limit {
		d.drop()
	}
	e := &dedupeEntry{key: key, receipt: r, expires: now.Add(d.window)}
	d.byKey[key] = e
	if d.back != nil {
		d.back.next = e
	} else {
		d.front = e
	}
	d.back = e
}

func (d *dedupe) trim(now time.Time) {
	for d.front != nil && !now.Before(d.front.expires) {
		d.drop()
	}
}

func (d *dedupe) drop() {
	e := d.front
	d.front = e.next
	if d.front == nil {
		d.back = nil
	}
	delete(d.byKey, e.key)
}
