package hub

import (
	"fmt"
	"time"
	"unsafe"
)

// dedupe remembers publish receipts by idempotency key (Key.ID: the key in
// its publisher's space) for a window of time, holding at most limit keys
// and limit × KeyBytes bytes of what they keep, and at most perClient keys
// and perClient × KeyBytes bytes for any one client (the hub refuses new
// keys past either, see admit, rather than forget a key still inside its
// window). What a key keeps is counted by entryCost: its entry, its ID and
// its commit's topics (which Outcome's scoping needs for the whole window,
// long after the commit left the ring).
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
	perClient int   // <= 0: no share
	bytes     int64 // the cost of every entry held (entryCost)
	byKey     map[string]*dedupeEntry
	byClient  map[string]*dedupeClient
	front     *dedupeEntry
	back      *dedupeEntry
}

type dedupeEntry struct {
	key     string // Key.ID
	receipt Receipt
	digest  Digest // the commit's facts: a reuse with others is ErrKeyReused
	cost    int64  // entryCost
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
	bytes       int64
	front, back *dedupeEntry
}

// KeyBytes is what the dedupe table allows each key it may hold to keep on
// average: the table holds at most dedupe-keys × KeyBytes bytes, a client
// at most dedupe-keys-per-client × KeyBytes (docs/limits.md). A key and
// the topics of a one-fact commit take a few hundred bytes; a commit of
// many long topics takes up to tens of KiB, and then the bytes, not the
// count, bound how many such keys are held.
const KeyBytes = 1 << 10

// entryObj is the heap an entry takes besides its strings.
var entryObj = int64(allocSize(int(unsafe.Sizeof(dedupeEntry{})))) + 48 // and its slot in byKey

// entryCost is what an entry for key (Key.ID) with topics keeps on the heap.
func entryCost(key string, topics []string) int64 {
	n := entryObj + int64(allocSize(len(key))) + int64(allocSize(len(topics)*int(unsafe.Sizeof(""))))
	for _, t := range topics {
		n += int64(allocSize(len(t)))
	}
	return n
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

// admit reports whether put can take n new keys of client costing bytes
// (entryCost, summed) without forgetting a key still inside its window,
// or else a *DedupeFullError saying when to retry (call get first: it
// drops the expired ones). More new keys, or bytes, than one client may
// hold, or than the table holds, are refused with ErrTooManyKeys: no wait
// would make room for them.
func (d *dedupe) admit(client string, n int, bytes int64, now time.Time) error {
	if n == 0 || d.off() {
		return nil
	}
	limitBytes, shareBytes := int64(d.limit)*KeyBytes, int64(d.perClient)*KeyBytes
	switch {
	case d.perClient > 0 && n > d.perClient:
		return fmt.Errorf("%w: %d of them, more than one client may hold (dedupe-keys-per-client %d); publish them in smaller batches",
			ErrTooManyKeys, n, d.perClient)
	case n > d.limit:
		return fmt.Errorf("%w: %d of them, more than the dedupe table holds (dedupe-keys %d); publish them in smaller batches",
			ErrTooManyKeys, n, d.limit)
	case d.perClient > 0 && bytes > shareBytes:
		return fmt.Errorf("%w: they would keep %d bytes, more than one client may hold (dedupe-keys-per-client %d × %d bytes); publish them in smaller batches",
			ErrTooManyKeys, bytes, d.perClient, KeyBytes)
	case bytes > limitBytes:
		return fmt.Errorf("%w: they would keep %d bytes, more than the dedupe table holds (dedupe-keys %d × %d bytes); publish them in smaller batches",
			ErrTooManyKeys, bytes, d.limit, KeyBytes)
	}
	if c := d.byClient[client]; d.perClient > 0 && c != nil && (c.keys+n > d.perClient || c.bytes+bytes > shareBytes) {
		// Room comes when enough of the client's oldest keys expire for
		// both its count and its bytes.
		e, keys, held := c.front, c.keys, c.bytes
		for {
			keys, held = keys-1, held-e.cost
			if keys+n <= d.perClient && held+bytes <= shareBytes {
				break
			}
			e = e.nextOf
		}
		return &DedupeFullError{
			RetryAfter: e.expires.Sub(now),
			msg: fmt.Sprintf("hub: this client's share of the dedupe table (dedupe-keys-per-client %d, %d bytes) is full of idempotency keys still inside the dedupe window (it holds %d, %d bytes); retry later",
				d.perClient, shareBytes, c.keys, c.bytes),
		}
	}
	if len(d.byKey)+n > d.limit || d.bytes+bytes > limitBytes {
		e, keys, held := d.front, len(d.byKey), d.bytes
		for {
			keys, held = keys-1, held-e.cost
			if keys+n <= d.limit && held+bytes <= limitBytes {
				break
			}
			e = e.next
		}
		return &DedupeFullError{RetryAfter: e.expires.Sub(now), msg: ErrDedupeFull.Error()}
	}
	return nil
}

// put records a receipt for client, the digest of the commit's facts and
// its distinct topics; the key (Key.ID) must not be present. At the limit
// it forgets the oldest keys: the hub calls admit first and refuses
// instead.
func (d *dedupe) put(client, key string, r Receipt, digest Digest, topics []string, now time.Time) {
	if d.off() {
		return
	}
	cost := entryCost(key, topics)
	for d.front != nil && (len(d.byKey) >= d.limit || d.bytes+cost > int64(d.limit)*KeyBytes) {
		d.drop()
	}
	c := d.byClient[client]
	if c == nil {
		c = &dedupeClient{id: client}
		d.byClient[client] = c
	}
	e := &dedupeEntry{key: key, receipt: r, digest: digest, cost: cost, topics: topics, expires: now.Add(d.window), client: c}
	d.bytes += cost
	c.bytes += cost
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
	d.bytes -= e.cost
	c := e.client
	c.bytes -= e.cost
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
