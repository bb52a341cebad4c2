package hub

import (
	"context"
	"errors"
	"slices"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// PublishOutcome is what became of a publish with an idempotency key
// (GetPublishOutcome, docs/protocol.md "Reading a publish's outcome").
type PublishOutcome struct {
	// Applied: a commit with the key was appended; Receipt is its original
	// receipt (Duplicate false) and Topics its facts' distinct topics, by
	// which the hub scopes the answer to its caller (Admitter.MayRead).
	Applied bool
	Receipt Receipt
	Topics  []string
	// RememberedSince is the instant from which the store remembers every
	// key: when Applied is false, no commit with the key was appended at
	// or after it. Never later than the time of the question.
	RememberedSince time.Time
}

// Unknown is o as answered to a caller who may not see the commit: the
// answer for a key never published, with the same RememberedSince.
func (o PublishOutcome) Unknown() PublishOutcome {
	return PublishOutcome{RememberedSince: o.RememberedSince}
}

// OutcomeLog is a Log that can say what became of an idempotency key,
// from the log itself (not from what this replica has received), so that
// every replica, before and after a restart, answers alike. Outcome sets
// Receipt.Epoch to zero; the hub fills it in.
type OutcomeLog interface {
	Log
	Outcome(ctx context.Context, key Key) (PublishOutcome, error)
}

// ErrNoKey is returned by Hub.Outcome for an empty idempotency key.
var ErrNoKey = errors.New("hub: an idempotency key is required")

// ErrOutcomeUnsupported is returned by Hub.Outcome when the hub's Log
// cannot say what became of a key (it does not implement OutcomeLog).
var ErrOutcomeUnsupported = errors.New("hub: this store cannot read a publish's outcome")

// Outcome reads, without writing, what became of a publish with key, in
// its publisher's space only: on memory from the dedupe table
// (RememberedSince: the later of the hub's start and the dedupe window's
// start; now when dedupe is off), with a Log from the Log (OutcomeLog). A
// draining hub still answers. With an Admitter (Config.Admit), the key
// is in the space of the caller ctx belongs to (Admitter.Publisher,
// whatever key.Publisher was), and a caller who may not read every topic
// of the commit (Admitter.MayRead) gets exactly the answer for an unknown
// key.
func (h *Hub) Outcome(ctx context.Context, key Key) (PublishOutcome, error) {
	if key.Name == "" {
		return PublishOutcome{}, ErrNoKey
	}
	a := h.cfg.Admit
	if a != nil {
		key.Publisher = a.Publisher(ctx)
	}
	o, err := h.backend.outcome(ctx, key)
	if err == nil && o.Applied && a != nil && !a.MayRead(ctx, o.Topics) {
		o = o.Unknown()
	}
	return o, err
}

// CommitTopics is the distinct topics of a commit's facts, in the order
// they first appear. The strings are the facts' own, not copies.
func CommitTopics(facts []*ringcastv1.Fact) []string {
	topics := make([]string, 0, 1)
	for _, f := range facts {
		if t := f.GetTopic(); !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	return slices.Clip(topics)
}
