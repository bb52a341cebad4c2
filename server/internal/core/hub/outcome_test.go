package hub_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestOutcomeOnMemory: the outcome of a key is its original receipt and
// its commit's distinct topics, after a duplicate too; an unknown key is
// not applied, remembered since the hub's start (younger than the dedupe
// window); an empty key is ErrNoKey.
func TestOutcomeOnMemory(t *testing.T) {
	before := time.Now()
	h := newHub(t, hub.Config{Window: 2})
	facts := []*ringcastv1.Fact{{Topic: "a/1", Type: "t"}, {Topic: "b", Type: "t"}, {Topic: "a/1", Type: "t"}}
	r, err := h.Publish(facts, "k")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the commit leaves the ring, not the table
		if _, err := h.Publish([]*ringcastv1.Fact{{Topic: "c", Type: "t"}}, ""); err != nil {
			t.Fatal(err)
		}
	}
	retry := []*ringcastv1.Fact{{Topic: "a/1", Type: "t"}, {Topic: "b", Type: "t"}, {Topic: "a/1", Type: "t"}}
	if dup, err := h.Publish(retry, "k"); err != nil || !dup.Duplicate {
		t.Fatalf("retry %+v, %v: want a duplicate", dup, err)
	}
	o, err := h.Outcome(context.Background(), hub.Key{Name: "k"})
	if err != nil || !o.Applied || o.Receipt != r || !slices.Equal(o.Topics, []string{"a/1", "b"}) {
		t.Fatalf("outcome %+v, %v: want applied with %+v and topics a/1, b", o, err, r)
	}
	o, err = h.Outcome(context.Background(), hub.Key{Name: "unknown"})
	if err != nil || o.Applied || o.RememberedSince.Before(before) || o.RememberedSince.After(time.Now()) {
		t.Fatalf("unknown key: %+v, %v: want not applied, remembered since the hub's start", o, err)
	}
	if u := o.Unknown(); u.Applied || u.Topics != nil || !u.RememberedSince.Equal(o.RememberedSince) {
		t.Fatalf("Unknown() = %+v", u)
	}
	if _, err := h.Outcome(context.Background(), hub.Key{Name: ""}); !errors.Is(err, hub.ErrNoKey) {
		t.Fatalf("empty key: %v, want ErrNoKey", err)
	}
}

// outcomeLog is a sliceLog that answers outcomes as told.
type outcomeLog struct {
	*sliceLog
	answer hub.PublishOutcome
}

func (l *outcomeLog) Outcome(context.Context, hub.Key) (hub.PublishOutcome, error) {
	return l.answer, nil
}

// TestOutcomeWithALog: a Log that cannot answer makes Outcome
// ErrOutcomeUnsupported; one that can is answered with the hub's epoch
// on the receipt and remembered_since no later than now.
func TestOutcomeWithALog(t *testing.T) {
	h := newLogHub(t, newSliceLog(testLogEpoch), 4)
	if _, err := h.Outcome(context.Background(), hub.Key{Name: "k"}); !errors.Is(err, hub.ErrOutcomeUnsupported) {
		t.Fatalf("a Log without Outcome: %v, want ErrOutcomeUnsupported", err)
	}
	at := time.Now()
	l := &outcomeLog{sliceLog: newSliceLog(testLogEpoch), answer: hub.PublishOutcome{
		Applied: true, Receipt: hub.Receipt{Seq: 3, Time: at}, Topics: []string{"a"}, RememberedSince: at.Add(time.Hour),
	}}
	h = newLogHub(t, l, 4)
	o, err := h.Outcome(context.Background(), hub.Key{Name: "k"})
	if err != nil || o.Receipt != (hub.Receipt{Seq: 3, Epoch: testLogEpoch, Time: at}) || o.RememberedSince.After(time.Now()) {
		t.Fatalf("outcome %+v, %v: want the Log's receipt with the epoch, remembered since no later than now", o, err)
	}
}
