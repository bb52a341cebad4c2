package hub

import (
	"errors"
	"fmt"
	"testing"
	"time"
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
		d.put("a", fmt.Sprint("a", i), Receipt{Seq: uint64(i + 1)}, now.Add(time.Duration(i)*time.Second))
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
		d.put("b", fmt.Sprint("b", i), Receipt{}, at)
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
	if err := d.admit("a", 6, now.Add(time.Hour)); err != nil {
		t.Fatalf("a batch of 6 new keys from a client holding none: %v", err)
	}
	if err := d.admit("a", 9, now.Add(time.Hour)); err == nil {
		t.Fatal("9 new keys into a table of 8 admitted")
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
		d.put("a", fmt.Sprint(i), Receipt{}, now)
	}
	if err := d.admit("b", 1, now); !errors.Is(err, ErrDedupeFull) {
		t.Fatalf("b's key in a full table: %v, want ErrDedupeFull", err)
	}
}
