package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// replicaStatus sends, with a Log, this replica's ServerStatus unpositioned
// (seq 0) at the start of a stream; in memory statuses are in the ring.
func (s *stream) replicaStatus() error { return s.h.backend.replicaStatus(s) }

// maxLogBatch bounds how many commits a stream behind the ring reads from
// the Log per request: each read is a round trip, so it is larger than the
// ring's batch.
const maxLogBatch = 1024

// readLog reads the next batch of commits from the Log for a stream behind
// the ring, none past until_seq. A position the Log no longer holds ends
// the stream with ResyncRequired(SUBSCRIBER_LAGGING), as the ring would.
func (s *stream) readLog(ctx context.Context) ([]*Event, error) {
	h := s.h
	batch, err := h.log.Read(ctx, s.batch[:0], s.next, maxLogBatch)
	if errors.Is(err, ErrTooOld) || (err == nil && len(batch) == 0) {
		oldest, head := h.Bounds()
		h.cfg.Observer.Lagged(s.req.Face)
		return nil, s.resync(ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING, s.next-1, oldest, head)
	}
	if err != nil {
		h.failIfReplaced(err) // a damaged commit: the hub stops serving its epoch
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if u := s.req.UntilSeq; u > 0 {
		n := 0
		for n < len(batch) && batch[n].Seq <= u {
			n++
		}
		batch = batch[:n]
		if n == 0 {
			s.next, s.coveredFP = u+1, 0 // nothing the Log holds up to u: covered
		}
	}
	// At most MaxBatchBytes of it is kept (the first event always): the
	// rest is read again, mostly from the Log's cache, once this is sent.
	var bytes int64
	for i, ev := range batch {
		if bytes += ev.cost; MaxBatchBytes.Over(bytes) && i > 0 {
			clear(batch[i:])
			batch = batch[:i]
			break
		}
	}
	s.batch = batch
	return batch, nil
}

// fingerprintLocked is the fingerprint of the event at seq: the ring's
// event, or the one the ring evicted last; 0 when neither is at seq.
func (h *Hub) fingerprintLocked(seq uint64) uint32 {
	if ev := h.ring.get(seq); ev != nil {
		return ev.Fingerprint()
	}
	if seq != 0 && h.ring.evicted.lastSeq == seq {
		return h.ring.evicted.lastFP
	}
	return 0
}

// eventTimeLocked is the time of the event at seq, or the boot time when
// the ring does not hold it (an empty ring).
func (h *Hub) eventTimeLocked(seq uint64) time.Time {
	if ev := h.ring.get(seq); ev != nil {
		return ev.Time
	}
	return h.boot
}
