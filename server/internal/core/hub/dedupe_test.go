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
		if err := d.admit("a", 1, now); err != nil {
			t.Fatalf("a's key %d: %v", i, err)
		}
		d.put("a", fmt.Sprint("a", i), Receipt{Seq: uint64(i + 1)}, nil, now.Add(time.Duration(i)*time.Second))
	}
	at := now.Add(10 * time.Second)
	err := d.admit("a", 1, at)
	var full *DedupeFullError
	if !errors.As(err, &full) || !errors.Is(err, ErrDedupeFull) || full.RetryAfter != 50*time.Second {
		t.Fatalf("a's fifth key: %v, want a refusal with RetryAfter 50s (a0 expires at 60s)", err)
	}
	if err := d.admit("b", 4, at); err != nil {
		t.Fatalf("b's four keys with a at its share: %v", err)
	}
	for i := range 4 {
		d.put("b", fmt.Sprint("b", i), Receipt{}, nil, at)
	}
	if err := d.admit("c", 1, at); !errors.As(err, &full) || full.RetryAfter != 50*time.Second {
		t.Fatalf("c's key with the table full: %v, want a refusal with RetryAfter 50s", err)
	}
	// a0 and a1 expire: a may take two more keys, not three.
	at = now.Add(61 * time.Second)
	if _, ok := d.get("a0", at); ok {
		t.Fatal("a0 outlived its window")
	}
	if r, ok := d.get("a2", at); !ok || r.Seq != 3 {
		t.Fatalf("a2 inside its window: %v %v", r, ok)
	}
	if err := d.admit("a", 3, at); !errors.As(err, &full) || full.RetryAfter != time.Second {
		t.Fatalf("three keys of a holding two: %v, want a refusal with RetryAfter 1s (a2 expires at 62s)", err)
	}
	if err := d.admit("a", 2, at); err != nil {
		t.Fatalf("two keys of a holding two: %v", err)
	}
	// Every key expires: the clients are forgotten.
	d.trim(now.Add(time.Hour))
	if len(d.byKey) != 0 || len(d.byClient) != 0 {
		t.Fatalf("after every window: %d keys, %d clients", len(d.byKey), len(d.byClient))
	}
	if err := d.admit("a", 4, now.Add(time.Hour)); err != nil {
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
	err := d.admit("a", 5, now)
	var full *DedupeFullError
	if !errors.Is(err, ErrTooManyKeys) || errors.As(err, &full) || errors.Is(err, ErrDedupeFull) ||
		!strings.Contains(err.Error(), "dedupe-keys-per-client 4") || !strings.Contains(err.Error(), "smaller batches") {
		t.Fatalf("5 new keys in one batch with a share of 4: %v, want ErrTooManyKeys naming the share", err)
	}
	d = newDedupe(time.Minute, 8, -1)
	if err := d.admit("a", 8, now); err != nil {
		t.Fatalf("8 new keys into an empty table of 8 with no share: %v", err)
	}
	if err := d.admit("a", 9, now); !errors.Is(err, ErrTooManyKeys) || !strings.Contains(err.Error(), "dedupe-keys 8") {
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
		d.put("a", fmt.Sprint("a", i), Receipt{}, nil, now.Add(time.Duration(i)*time.Second))
	}
	var full *DedupeFullError
	// a holds 4 of 4, expiring at 60, 61, 62, 63s: 3 new keys need three gone.
	if err := d.admit("a", 3, now.Add(10*time.Second)); !errors.As(err, &full) || full.RetryAfter != 52*time.Second {
		t.Fatalf("3 new keys of a holding its share: %v, want RetryAfter 52s (a2 expires at 62s)", err)
	}
	for i := range 4 {
		d.put("b", fmt.Sprint("b", i), Receipt{}, nil, now.Add(time.Duration(4+i)*time.Second))
	}
	// The table is full (expiring at 60…67s): c's 2 new keys need a0 and a1 gone.
	if err := d.admit("c", 2, now.Add(10*time.Second)); !errors.As(err, &full) || full.RetryAfter != 51*time.Second {
		t.Fatalf("2 new keys of c into a full table: %v, want RetryAfter 51s (a1 expires at 61s)", err)
	}
}

// TestDedupeShareOff: a negative share lets one client fill the table.
func TestDedupeShareOff(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(time.Minute, 4, -1)
	for i := range 4 {
		if err := d.admit("a", 1, now); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		d.put("a", fmt.Sprint(i), Receipt{}, nil, now)
	}
	if err := d.admit("b", 1, now); !errors.Is(err, ErrDedupeFull) {
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
	d.put("a", "k", Receipt{Seq: 7, Time: at}, []string{"t"}, at)
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
