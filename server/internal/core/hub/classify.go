package hub

import (
	"context"
	"errors"
	"fmt"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// classification is a subscribe's start: the reason it cannot be served
// (REASON_UNSPECIFIED when it can), the range the decision saw and, for a
// resume inside a commit, that commit.
type classification struct {
	reason       ringcastv1.Reason
	outcome      Outcome
	oldest, head uint64
	partial      *Event
	// at is, for a request with SinceTime, the seq the stream starts at
	// (sinceTime).
	at uint64
}

// classify decides a subscribe's start against the ring or, for a cursor
// outside the ring, against the Log's range.
func (h *Hub) classify(ctx context.Context, req Request) (classification, error) {
	if !req.SinceTime.IsZero() && req.SinceSeq == 0 && !req.MalformedCursor {
		return h.classifyTime(ctx, req)
	}
	return h.backend.classify(ctx, req)
}

// classifyLog is classify's cursor case with a Log: a cursor outside the
// ring is decided against the Log's range, and a resume inside a commit
// the ring no longer holds reads the commit from the Log.
func (h *Hub) classifyLog(ctx context.Context, req Request) (classification, error) {
	var c classification
	h.mu.RLock()
	c.oldest, c.head = h.boundsLocked()
	ringOldest := h.ring.oldest()
	h.mu.RUnlock()
	if req.SinceSeq > 0 && req.Epoch == h.epoch && (req.SinceSeq+1 < ringOldest || req.SinceSeq > c.head) {
		first, last, err := h.logRange(ctx)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		c.oldest, c.head = first, max(c.head, last)
	}
	var fp uint32 // the fingerprint of the commit at since_seq (0: none held)
	if req.SinceSeq > 0 && (req.SinceFact > 0 || req.SinceFingerprint != 0) && req.Epoch == h.epoch && req.SinceSeq <= c.head {
		if req.SinceSeq >= c.oldest {
			ev, err := h.eventAt(ctx, req.SinceSeq)
			if err != nil {
				return c, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			c.partial = ev
			if ev != nil {
				fp = ev.Fingerprint()
			}
		} else {
			h.mu.RLock()
			fp = h.fingerprintLocked(req.SinceSeq) // the Log discarded it; the ring may still hold it
			h.mu.RUnlock()
		}
	}
	at := func(uint64) *Event { return c.partial }
	c.reason, c.outcome = classify(req, h.epoch, c.oldest, c.head, at, func(uint64) uint32 { return fp })
	if c.reason != ringcastv1.Reason_REASON_UNSPECIFIED || req.SinceFact == 0 {
		c.partial = nil
	}
	return c, nil
}

// classifyTime decides the start of a stream from a time: the seq it
// starts at or, when events at or after the time may no longer be
// retained, exactly the answer for a cursor below the window
// (REASON_CURSOR_TOO_OLD, with requested seq 0).
func (h *Hub) classifyTime(ctx context.Context, req Request) (classification, error) {
	var c classification
	at, err := h.seqAtTime(ctx, req.SinceTime)
	switch {
	case errors.Is(err, ErrTooOld):
		c.reason, c.outcome = ringcastv1.Reason_REASON_CURSOR_TOO_OLD, OutcomeTooOld
	case err != nil:
		return c, err
	default:
		c.outcome = OutcomeNew
	}
	h.mu.RLock()
	c.oldest, c.head = h.boundsLocked()
	h.mu.RUnlock()
	if c.reason != ringcastv1.Reason_REASON_UNSPECIFIED {
		// With a Log, the answer names the Log's range.
		if err := h.backend.refusedTimeRange(ctx, &c); err != nil {
			return c, err
		}
	}
	c.at = at
	return c, nil
}

// classify applies the subscribe table of docs/protocol.md to a request
// against the servable range [oldest, head]; at returns the commit at a seq
// in that range, and fp the fingerprint of the event at a seq (0 when
// unknown: a hole, or a commit neither the ring nor the Log still holds).
// It returns REASON_UNSPECIFIED when the request is servable.
func classify(req Request, epoch, oldest, head uint64, at func(uint64) *Event, fp func(uint64) uint32) (ringcastv1.Reason, Outcome) {
	switch {
	case req.MalformedCursor:
		return ringcastv1.Reason_REASON_MALFORMED_CURSOR, OutcomeMalformedCursor
	case req.SinceSeq == 0:
		return ringcastv1.Reason_REASON_UNSPECIFIED, OutcomeNew
	case req.Epoch != epoch:
		return ringcastv1.Reason_REASON_EPOCH_MISMATCH, OutcomeEpochMismatch
	case req.SinceSeq > head:
		return ringcastv1.Reason_REASON_CURSOR_AHEAD, OutcomeAhead
	case req.SinceSeq+1 < oldest:
		return ringcastv1.Reason_REASON_CURSOR_TOO_OLD, OutcomeTooOld
	case req.SinceFingerprint != 0 && fingerprintDiffers(req.SinceFingerprint, fp(req.SinceSeq)):
		return ringcastv1.Reason_REASON_COMMIT_MISMATCH, OutcomeCommitMismatch
	case req.SinceFact > 0:
		ev := at(req.SinceSeq)
		if req.SinceSeq < oldest || ev == nil || req.SinceFact >= ev.Commit().GetFactCount() {
			return ringcastv1.Reason_REASON_FACT_OUT_OF_RANGE, OutcomeFactOutOfRange
		}
	}
	return ringcastv1.Reason_REASON_UNSPECIFIED, OutcomeResumed
}

// fingerprintDiffers reports whether a cursor's fingerprint names another
// commit than the one whose fingerprint is got. A commit whose fingerprint
// is unknown (got 0: a hole, or one no longer held) cannot be checked; the
// cursor is then served by its epoch and seq, as one without a fingerprint.
func fingerprintDiffers(held, got uint32) bool { return got != 0 && got != held }
