package hub

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
)

// Log is the hub's storage seam: where commits become durable and get their
// seq. The hub keeps the stream contract for every face; a Log only stores.
//
// The hub serves from one store (its store interface, store.go), chosen
// in New; two exist:
//
//   - memory (Config.Log nil, memStore): the ring is the log. The hub
//     numbers every event itself, server statuses included, and keeps
//     the last W.
//   - a durable Log (logStore; JetStream, see store/natslog): the Log
//     numbers commits, and every commit — published through this hub or through
//     another replica of the same log — reaches the hub through Follow, in
//     seq order. The ring is then a cache of the newest W commits; a
//     position older than the ring is read back with Read. Server statuses
//     are per replica and unpositioned (docs/protocol.md, "Stores").
type Log interface {
	// Epoch identifies the log's seq space: the instance_epoch. It is the
	// same on every replica and across restarts, and changes only when the
	// log is recreated.
	Epoch() uint64
	// Append makes one commit durable and returns its seq and time (Epoch
	// left zero). With a non-empty IdempotencyKey, a key the log has seen
	// within its duplicate window returns the original seq and time with
	// Duplicate set and appends nothing. The log keeps the commit's
	// Traceparent and gives it back on the commit's events. The facts are
	// owned by the Log once passed.
	Append(ctx context.Context, at time.Time, c Commit) (Receipt, error)
	// Read appends to dst up to max commits with seq >= from, in seq order
	// (seqs may skip deleted messages). It returns ErrTooOld when from is
	// below the log's first seq.
	Read(ctx context.Context, dst []*Event, from uint64, max int) ([]*Event, error)
	// Range is the log's first and last seq now (first = last+1 when it
	// holds nothing). It fails with ErrLogReplaced when the log was
	// replaced, and with ErrLogDamaged when it lost commits, has holes it
	// did not have, or lost its oldest commits without its limits
	// discarding them.
	Range(ctx context.Context) (first, last uint64, err error)
	// Follow calls apply with every commit with seq >= from, in seq order,
	// until ctx ends or the log fails. apply is called on one goroutine.
	// It fails with ErrLogReplaced, before applying any of its commits,
	// when the log was replaced.
	Follow(ctx context.Context, from uint64, apply func(*Event)) error
	// SeqAtTime is the seq of the first commit whose event time is at or
	// after t (last+1 when there is none), found by the log's own time
	// index, not by reading the log through. It returns ErrTooOld when
	// commits at or after t may have been discarded by the log's limits:
	// its oldest retained commit is at or after t and its seq is above 1
	// (or it retains none and its last commit was at or after t).
	SeqAtTime(ctx context.Context, t time.Time) (uint64, error)
}

// A Log's capabilities beyond storing are each a method of a named
// interface the hub (and the server around it) asks for by name:
// BatchLog (atomic batches), OutcomeLog (a key's outcome), DedupeLog (its
// duplicate window), LimitsLog (its retention), AvailabilityLog
// (whether it takes commits now), EchoLog (its own commits handed over
// from their acknowledgement, own.go) and FlushLog (work it finishes
// after acknowledging). A Log that lacks one does not
// implement it, and the hub answers for it: ErrBatchUnsupported,
// ErrOutcomeUnsupported, the hub's own DedupeWindow, no store limits,
// always available.

// DedupeLog is a Log that deduplicates idempotency keys within a window of
// its own (across replicas and restarts): ServerStatus reports it as the
// dedupe window.
type DedupeLog interface {
	Log
	DedupeWindow() time.Duration
}

// FlushLog is a Log that finishes work of its own after an append returned
// (its bookkeeping, say): Flush waits for it, and the hub calls it when it
// closes, so that a clean stop leaves the Log's records whole.
type FlushLog interface {
	Log
	Flush(ctx context.Context) error
}

// LimitsLog is a Log with retention limits: ServerStatus reports them
// (Limits.store).
type LimitsLog interface {
	Log
	StoreLimits() StoreLimits
}

// AvailabilityLog is a Log that can tell whether it takes commits now: nil
// when it does, else an error wrapping ErrStoreFull (a condition that
// passes) or naming why it is unavailable. Readiness follows it.
type AvailabilityLog interface {
	Log
	Available(ctx context.Context) error
}

// StoreLimits is a durable Log's retention: past any of its limits the
// Log discards its oldest commits (0: no bound). A Log that has limits
// reports them as a LimitsLog; the hub shows them in ServerStatus
// (Limits.store).
type StoreLimits struct {
	MaxBytes   int64
	MaxAge     time.Duration
	MaxCommits int64
}

// proto is l as ServerStatus carries it; nil for nil.
func (l *StoreLimits) proto() *ringcastv1.StoreLimits {
	if l == nil {
		return nil
	}
	p := &ringcastv1.StoreLimits{MaxBytes: uint64(max(l.MaxBytes, 0)), MaxCommits: uint64(max(l.MaxCommits, 0))}
	if l.MaxAge > 0 {
		p.MaxAge = durationpb.New(l.MaxAge)
	}
	return p
}

// ErrLogReplaced is wrapped by the error of a Log's Range or Follow, or of
// an Append or AppendBatch whose commit landed in the new storage, when the
// storage it was opened on was replaced by another under the same name (a
// JetStream stream deleted and created again): its seqs no longer belong to
// Epoch. The hub then drains, follows the Log no more and reports the error
// on Failed; the process must restart to take the new epoch.
var ErrLogReplaced = errors.New("hub: the log was replaced (deleted and created again)")

// ErrLogDamaged is wrapped by the error of a Log that finds its storage
// damaged: commits it acknowledged are lost, it has holes, or its oldest
// commits are gone without its limits discarding them (a stream purged or
// cut, message blocks lost or corrupted). Its seqs may be given again to
// other commits, so it must not be served under Epoch: from Range or
// Follow, the hub drains and reports it on Failed as for ErrLogReplaced.
var ErrLogDamaged = errors.New("hub: the log is damaged (acknowledged commits lost, holes, or oldest commits gone)")

// ErrTooOld is returned by Log.Read for a position below the log's first
// seq, and by Log.SeqAtTime for a time whose commits may have been
// discarded.
var ErrTooOld = errors.New("hub: position below the log's first seq")

// ErrStoreFull is wrapped by a Log's refusal of a commit for want of room
// (its limits discard new commits, or its storage is exhausted): a
// condition that passes, told to clients as such.
var ErrStoreFull = errors.New("store full")

// ErrCommitTooLarge is wrapped by the error of a Log's Append or
// AppendBatch for a commit larger than its store takes (an external NATS
// whose max_payload is below the request limit): the commit was not
// stored, and no retry will store it. The hub returns it as it is, never
// as ErrUnavailable; its message names the store's limit in bytes.
var ErrCommitTooLarge = errors.New("hub: commit too large for the store")

// ErrUnavailable wraps a Log's failure to append: the publish was not
// acknowledged and may be retried (with its idempotency key).
var ErrUnavailable = errors.New("hub: log unavailable")

// NewCommitEvent builds the event of a commit read from a Log, with the
// W3C traceparent its publish had (empty: none), fingerprinted as the
// memory store fingerprints its commits (by seq and time).
func NewCommitEvent(epoch, seq uint64, at time.Time, facts []*ringcastv1.Fact, traceparent string) *Event {
	return newCommitEvent(epoch, seq, at, facts, traceparent)
}

// NewStoredCommitEvent is NewCommitEvent with the fingerprint fp the Log
// derives from what it stores of the commit (package fingerprint), the
// same on every replica and across restarts. fp 0 is taken as 1.
func NewStoredCommitEvent(epoch, seq uint64, at time.Time, facts []*ringcastv1.Fact, traceparent string, fp uint32) *Event {
	return newCommitEventFP(epoch, seq, at, facts, traceparent, fingerprint.Of(fp))
}
