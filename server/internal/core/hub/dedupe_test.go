package hub

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestDedupeShareIsPerClient: a client holds at most its share of the
// table; past it only that client's new keys are refused, with the time
// until its own oldest key expires; its keys expiring give its share back;
// and a client holding no key may take a batch larger than a share.
func TestDedupeShareIsPerClient(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 8, 0) // a share of 4
	for i := range 4 {
		if err := d.admit("a", 1, 0, now); err != nil {
			t.Fatalf("a's key %d: %v", i, err)
		}
		d.put("a", fmt.Sprint("a", i), Receipt{Seq: uint64(i + 1)}, Digest{}, nil, now.Add(time.Duration(i)*time.Second))
	}
	at := now.Add(10 * time.Second)
	err := d.admit("a", 1, 0, at)
	var full *DedupeFullError
	if !errors.As(err, &full) || !errors.Is(err, ErrDedupeFull) || full.RetryAfter != 50*time.Second {
		t.Fatalf("a's fifth key: %v, want a refusal with RetryAfter 50s (a0 expires at 60s)", err)
	}
	if err := d.admit("b", 4, 0, at); err != nil {
		t.Fatalf("b's four keys with a at its share: %v", err)
	}
	for i := range 4 {
		d.put("b", fmt.Sprint("b", i), Receipt{}, Digest{}, nil, at)
	}
	if err := d.admit("c", 1, 0, at); !errors.As(err, &full) || full.RetryAfter != 50*time.Second {
		t.Fatalf("c's key with the table full: %v, want a refusal with RetryAfter 50s", err)
	}
	// a0 and a1 expire: a may take two more keys, not three.
	at = now.Add(61 * time.Second)
	if _, ok := d.getReceipt("a0", at); ok {
		t.Fatal("a0 outlived its window")
	}
	if r, ok := d.getReceipt("a2", at); !ok || r.Seq != 3 {
		t.Fatalf("a2 inside its window: %v %v", r, ok)
	}
	if err := d.admit("a", 3, 0, at); !errors.As(err, &full) || full.RetryAfter != time.Second {
		t.Fatalf("three keys of a holding two: %v, want a refusal with RetryAfter 1s (a2 expires at 62s)", err)
	}
	if err := d.admit("a", 2, 0, at); err != nil {
		t.Fatalf("two keys of a holding two: %v", err)
	}
	// Every key expires: the clients are forgotten.
	d.trim(now.Add(time.Hour))
	if len(d.byKey) != 0 || len(d.byClient) != 0 {
		t.Fatalf("after every window: %d keys, %d clients", len(d.byKey), len(d.byClient))
	}
	if err := d.admit("a", 4, 0, now.Add(time.Hour)); err != nil {
		t.Fatalf("a batch of 4 new keys from a client holding none: %v", err)
	}
}

// TestDedupeBatchOverTheShareIsRefused: a batch of more new keys than one
// client may hold is refused, even from a client holding none, so that no
// client takes more than its share in one batch; with no share, a batch
// larger than the table. Either refusal says to split the batch, and is
// no DedupeFullError: no wait would make room.
func TestDedupeBatchOverTheShareIsRefused(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 8, 0) // a share of 4
	err := d.admit("a", 5, 0, now)
	var full *DedupeFullError
	if !errors.Is(err, ErrTooManyKeys) || errors.As(err, &full) || errors.Is(err, ErrDedupeFull) ||
		!strings.Contains(err.Error(), "dedupe-keys-per-client 4") || !strings.Contains(err.Error(), "smaller batches") {
		t.Fatalf("5 new keys in one batch with a share of 4: %v, want ErrTooManyKeys naming the share", err)
	}
	d = newDedupe(time.Minute, 8, -1)
	if err := d.admit("a", 8, 0, now); err != nil {
		t.Fatalf("8 new keys into an empty table of 8 with no share: %v", err)
	}
	if err := d.admit("a", 9, 0, now); !errors.Is(err, ErrTooManyKeys) || !strings.Contains(err.Error(), "dedupe-keys 8") {
		t.Fatalf("9 new keys into a table of 8: %v, want ErrTooManyKeys naming dedupe-keys", err)
	}
}

// TestDedupeRetryAfterCoversTheBatch: a refused batch of n new keys is told
// to retry when enough of the oldest keys expire to make room for all n,
// not only the oldest: of the client's share, and of the table.
func TestDedupeRetryAfterCoversTheBatch(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 8, 0) // a share of 4
	for i := range 4 {
		d.put("a", fmt.Sprint("a", i), Receipt{}, Digest{}, nil, now.Add(time.Duration(i)*time.Second))
	}
	var full *DedupeFullError
	// a holds 4 of 4, expiring at 60, 61, 62, 63s: 3 new keys need three gone.
	if err := d.admit("a", 3, 0, now.Add(10*time.Second)); !errors.As(err, &full) || full.RetryAfter != 52*time.Second {
		t.Fatalf("3 new keys of a holding its share: %v, want RetryAfter 52s (a2 expires at 62s)", err)
	}
	for i := range 4 {
		d.put("b", fmt.Sprint("b", i), Receipt{}, Digest{}, nil, now.Add(time.Duration(4+i)*time.Second))
	}
	// The table is full (expiring at 60…67s): c's 2 new keys need a0 and a1 gone.
	if err := d.admit("c", 2, 0, now.Add(10*time.Second)); !errors.As(err, &full) || full.RetryAfter != 51*time.Second {
		t.Fatalf("2 new keys of c into a full table: %v, want RetryAfter 51s (a1 expires at 61s)", err)
	}
}

// TestDedupeShareOff: a negative share lets one client fill the table.
func TestDedupeShareOff(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 4, -1)
	for i := range 4 {
		if err := d.admit("a", 1, 0, now); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		d.put("a", fmt.Sprint(i), Receipt{}, Digest{}, nil, now)
	}
	if err := d.admit("b", 1, 0, now); !errors.Is(err, ErrDedupeFull) {
		t.Fatalf("b's key in a full table: %v, want ErrDedupeFull", err)
	}
}

// TestDedupeRemembersEveryKeySinceRememberedSince: a key put at or after
// rememberedSince is still in the table; one put before it may be gone.
// rememberedSince is never before the table's start nor later than now,
// and is now when dedupe is off.
func TestDedupeRemembersEveryKeySinceRememberedSince(t *testing.T) {
	boot := time.Unix(1000, 0)
	d := newDedupe(10*time.Second, 100, -1)
	at := boot.Add(20 * time.Second)
	d.put("a", "k", Receipt{Seq: 7, Time: at}, Digest{}, []string{"t"}, at)
	for _, now := range []time.Time{at, at.Add(10*time.Second - time.Nanosecond), at.Add(10 * time.Second)} {
		since := d.rememberedSince(boot, now)
		if since.After(now) || since.Before(boot) {
			t.Fatalf("at %v: remembered since %v, outside [%v, %v]", now, since, boot, now)
		}
		e := d.lookup("k", now)
		if !since.After(at) && e == nil {
			t.Fatalf("at %v: key put at %v forgotten, yet remembered since %v", now, at, since)
		}
		if e != nil && (e.receipt.Seq != 7 || len(e.topics) != 1) {
			t.Fatalf("entry %+v", e)
		}
	}
	if d.lookup("k", at.Add(10*time.Second)) != nil || d.entry("k", at.Add(10*time.Second)) != nil {
		t.Fatal("key kept past its window")
	}
	if got := d.rememberedSince(boot, boot.Add(time.Second)); !got.Equal(boot) {
		t.Fatalf("young table: remembered since %v, want its start %v", got, boot)
	}
	now := boot.Add(time.Hour)
	if got := newDedupe(0, 100, -1).rememberedSince(boot, now); !got.Equal(now) {
		t.Fatalf("dedupe off: remembered since %v, want now", got)
	}
}

// TestCommitTopicsAreDistinct: a commit's topics once each, in order.
func TestCommitTopicsAreDistinct(t *testing.T) {
	var facts []*ringcastv1.Fact
	for _, tp := range []string{"a", "b", "a", "c", "b"} {
		facts = append(facts, &ringcastv1.Fact{Topic: tp})
	}
	if got := CommitTopics(facts); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("topics %v, want a,b,c", got)
	}
}

// getReceipt is the receipt recorded for key, if it has not expired.
func (d *dedupe) getReceipt(key string, now time.Time) (Receipt, bool) {
	if e := d.entry(key, now); e != nil {
		return e.receipt, true
	}
	return Receipt{}, false
}

// TestDedupeCountsWhatKeysKeep: what each key keeps (its ID and its
// commit's topics) is counted against dedupe-keys × KeyBytes, a client's
// share against dedupe-keys-per-client × KeyBytes: a client of commits
// with many long topics is refused by bytes long before its key count,
// with the time until enough of its oldest keys expire; a batch keeping
// more than a share is ErrTooManyKeys; and the bytes come back as the keys
// expire.
func TestDedupeCountsWhatKeysKeep(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 64, 0) // a share of 32 keys, 32 KiB
	topics := make([]string, 64)
	for i := range topics {
		topics[i] = fmt.Sprintf("gauges/catchment-%03d/%s", i, strings.Repeat("x", 96))
	}
	cost := entryCost("0:k00", topics)
	if cost < 64*128 {
		t.Fatalf("an entry of 64 topics of ~120 bytes costs %d", cost)
	}
	held := 0
	for i := 0; ; i++ {
		at := now.Add(time.Duration(i) * time.Second)
		key := fmt.Sprintf("0:k%02d", i)
		err := d.admit("a", 1, entryCost(key, topics), at)
		if err != nil {
			var full *DedupeFullError
			if !errors.As(err, &full) || full.RetryAfter != time.Minute-time.Duration(i)*time.Second {
				t.Fatalf("key %d: %v, want a refusal until a's oldest key expires", i, err)
			}
			break
		}
		d.put("a", key, Receipt{}, Digest{}, topics, at)
		held++
	}
	if held >= 32 || d.byClient["a"].bytes > 32*KeyBytes || d.bytes != d.byClient["a"].bytes {
		t.Fatalf("a holds %d keys, %d bytes (table %d): want fewer than its 32 keys, within its 32 KiB", held, d.byClient["a"].bytes, d.bytes)
	}
	if err := d.admit("b", 8, 8*cost, now); !errors.Is(err, ErrTooManyKeys) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("a batch keeping more than a share: %v, want ErrTooManyKeys naming the bytes", err)
	}
	d.trim(now.Add(time.Hour))
	if d.bytes != 0 || len(d.byClient) != 0 {
		t.Fatalf("after every window: %d bytes, %d clients", d.bytes, len(d.byClient))
	}
}
