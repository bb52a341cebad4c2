package hub

import (
	"fmt"
	"time"
)

// dedupe remembers publish receipts by idempotency key for a window of time,
// holding at most limit keys, and at most perClient of them for any one
// client (the hub refuses new keys past either, see room, rather than
// forget a key still inside its window).
//
// It serves the memory store only: with a Log, the Log deduplicates alone
// (see publishLog), so that every replica answers a key alike.
//
// Entries form a FIFO list by first use, and each client's entries a FIFO
// list of their own; expiry and the limit both trim the front, which is
// also the front of its client's list. dedupe does no locking: Hub.mu
// guards it.
type dedupe struct {
	window    time.Duration
	limit     int
	perClient int // <= 0: no share
	byKey     map[string]*dedupeEntry
	byClient  map[string]*dedupeClient
	front     *dedupeEntry
	back      *dedupeEntry
}

type dedupeEntry struct {
	key     string
	receipt Receipt
	// topics are the commit's distinct topics, for Outcome's scoping: the
	// commit may leave the ring long before its key leaves the table.
	topics  []string
	expires time.Time
	next    *dedupeEntry
	client  *dedupeClient
	nextOf  *dedupeEntry // the next entry of the same client
}

// dedupeClient is one client's keys: how many, and its oldest and newest.
type dedupeClient struct {
	id          string
	keys        int
	front, back *dedupeEntry
}

// newDedupe returns a table of limit keys remembered for window, perClient
// of them at most for one client (0: half of limit; negative: no share).
func newDedupe(window time.Duration, limit, perClient int) *dedupe {
	if perClient == 0 {
		perClient = max(1, limit/2)
	}
	return &dedupe{window: window, limit: limit, perClient: perClient,
		byKey: make(map[string]*dedupeEntry), byClient: make(map[string]*dedupeClient)}
}

// get returns the receipt recorded for key, if it has not expired.
func (d *dedupe) get(key string, now time.Time) (Receipt, bool) {
	e := d.entry(key, now)
	if e == nil {
		return Receipt{}, false
	}
	return e.receipt, true
}

// entry is key's entry, nil when key is unknown or expired.
func (d *dedupe) entry(key string, now time.Time) *dedupeEntry {
	d.trim(now)
	return d.byKey[key]
}

// lookup is key's entry if it has not expired at now, nil otherwise; it
// changes nothing (Hub.Outcome calls it under a read lock).
func (d *dedupe) lookup(key string, now time.Time) *dedupeEntry {
	if e := d.byKey[key]; e != nil && now.Before(e.expires) {
		return e
	}
	return nil
}

// rememberedSince is the instant from which every key put is still in
// the table at now: a key put at t stays until t+window (exclusive, see
// trim), so one put after now-window is held. boot is when the table
// started; with dedupe off nothing is remembered, and it is now.
func (d *dedupe) rememberedSince(boot, now time.Time) time.Time {
	if d.off() {
		return now
	}
	since := now.Add(-d.window).Add(time.Nanosecond)
	if boot.After(since) {
		return boot
	}
	return since
}

func (d *dedupe) off() bool { return d.limit <= 0 || d.window <= 0 }

// admit reports whether put can take n new keys of client without
// forgetting a key still inside its window, or else a *DedupeFullError
// saying when to retry (call get first: it drops the expired ones). More
// new keys than one client may hold, or than the table holds, are refused
// with ErrTooManyKeys: no wait would make room for them.
func (d *dedupe) admit(client string, n int, now time.Time) error {
	if n == 0 || d.off() {
		return nil
	}
	switch {
	case d.perClient > 0 && n > d.perClient:
		return fmt.Errorf("%w: %d of them, more than one client may hold (dedupe-keys-per-client %d); publish them in smaller batches",
			ErrTooManyKeys, n, d.perClient)
	case n > d.limit:
		return fmt.Errorf("%w: %d of them, more than the dedupe table holds (dedupe-keys %d); publish them in smaller batches",
			ErrTooManyKeys, n, d.limit)
	}
	if c := d.byClient[client]; d.perClient > 0 && c != nil && c.keys+n > d.perClient {
		// Room for n comes when the client's (keys+n-perClient)-th oldest
		// key expires.
		e := c.front
		for range c.keys + n - d.perClient - 1 {
			e = e.nextOf
		}
		return &DedupeFullError{
			RetryAfter: e.expires.Sub(now),
			msg: fmt.Sprintf("hub: this client's share of the dedupe table (dedupe-keys-per-client %d) is full of idempotency keys still inside the dedupe window (it holds %d); retry later",
				d.perClient, c.keys),
		}
	}
	if len(d.byKey)+n > d.limit {
		e := d.front
		for range len(d.byKey) + n - d.limit - 1 {
			e = e.next
		}
		return &DedupeFullError{RetryAfter: e.expires.Sub(now), msg: ErrDedupeFull.Error()}
	}
	return nil
}

// put records a receipt for client, and the commit's distinct topics;
// the key must not be present. At the limit it forgets the oldest key:
// the hub calls admit first and refuses instead.
func (d *dedupe) put(client, key string, r Receipt, topics []string, now time.Time) {
	if d.off() {
		return
	}
	for len(d.byKey) >= d.limit {
		d.drop()
	}
	c := d.byClient[client]
	if c == nil {
		c = &dedupeClient{id: client}
		d.byClient[client] = c
	}
	e := &dedupeEntry{key: key, receipt: r, topics: topics, expires: now.Add(d.window), client: c}
	d.byKey[key] = e
	if d.back != nil {
		d.back.next = e
	} else {
		d.front = e
	}
	d.back = e
	if c.back != nil {
		c.back.nextOf = e
	} else {
		c.front = e
	}
	c.back = e
	c.keys++
}

func (d *dedupe) trim(now time.Time) {
	for d.front != nil && !now.Before(d.front.expires) {
		d.drop()
	}
}

// drop forgets the oldest key, the oldest of its client's too.
func (d *dedupe) drop() {
	e := d.front
	d.front = e.next
	if d.front == nil {
		d.back = nil
	}
	delete(d.byKey, e.key)
	c := e.client
	c.front = e.nextOf
	if c.front == nil {
		c.back = nil
	}
	if c.keys--; c.keys == 0 {
		delete(d.byClient, c.id)
	}
}

// DedupeFullError is a refusal of new idempotency keys (it matches
// ErrDedupeFull): the dedupe table, or the publishing client's share of
// it, is full of keys still inside their window. RetryAfter is when
// enough of the oldest of them expire to free room for the new keys.
type DedupeFullError struct {
	RetryAfter time.Duration
	msg        string
}

func (e *DedupeFullError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrDedupeFull) true.
func (e *DedupeFullError) Is(target error) bool { return target == ErrDedupeFull }
