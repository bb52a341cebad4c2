package hub

import (
	"context"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
)

// store is the hub's storage, chosen once by New: memStore when Config.Log
// is nil (the ring is the log), logStore otherwise (the ring caches the
// newest commits of a Log). Every behaviour that differs between the two
// is one of its methods, so that nothing else in the hub asks whether
// there is a Log. It is called once per publish, per subscribe's start and
// per stream read that leaves the ring's ordinary path (behind it, or
// draining), never per event: the memory store's fan-out is the ring's.
type store interface {
	// start readies the hub on the store: its epoch, its ring, its
	// notifier.
	start(ctx context.Context) error
	// publishCommit and publishBatch append commits whose facts are
	// checked (PublishCommit, PublishBatch).
	publishCommit(ctx context.Context, c Commit) (Receipt, error)
	publishBatch(ctx context.Context, commits []Commit) ([]Receipt, error)
	// outcome is what became of the publish with key (named).
	outcome(ctx context.Context, key Key) (PublishOutcome, error)
	// boundsLocked is the servable range. The caller holds mu.
	boundsLocked() (oldest, head uint64)
	// drainLocked marks where a draining hub's streams end. The caller
	// holds mu for writing.
	drainLocked()
	// drainHeadLocked is the head a draining hub's stream reads to, given
	// the ring's head. The caller holds mu.
	drainHeadLocked(head uint64) uint64
	// classify decides the start of a subscribe from a cursor (or none).
	classify(ctx context.Context, req Request) (classification, error)
	// seqAtTime is the seq a stream starting at t begins with, or
	// ErrTooOld (Hub.seqAtTime).
	seqAtTime(ctx context.Context, t time.Time) (uint64, error)
	// refusedTimeRange sets the range a start from a time refused as too
	// old names (c's, by default).
	refusedTimeRange(ctx context.Context, c *classification) error
	// lappedLocked moves on a stream lapped by the ring (s.next below
	// oldest) when nothing it would have sent is lost. The caller holds mu.
	lappedLocked(s *stream, oldest uint64)
	// behind reads on for a stream still behind the ring's oldest event
	// (the ring's range was [oldest, head] when it looked).
	behind(ctx context.Context, s *stream, oldest, head uint64) ([]*Event, error)
	// replicaStatus sends the replica's unpositioned ServerStatus at a
	// stream's start, where the store does not position statuses.
	replicaStatus(s *stream) error
}

// newStore is the store of h's config.
func newStore(h *Hub) store {
	if h.log != nil {
		return logStore{h}
	}
	return memStore{h}
}

// memStore is the memory store: the ring is the log. The hub numbers every
// event itself, server statuses included, keeps the last W, and
// deduplicates with its own table (dedupe.go); a new epoch every start.
type memStore struct{ h *Hub }

func (m memStore) start(context.Context) error {
	h := m.h
	e, err := epoch.New()
	if err != nil {
		return err
	}
	h.epoch = e
	h.ring = newRing(h.cfg.Window, h.cfg.MaxRingBytes)
	h.mu.Lock()
	h.publishStatusLocked(h.boot)
	h.mu.Unlock()
	h.notifierWG.Add(1)
	go h.notify()
	return nil
}

func (m memStore) publishCommit(ctx context.Context, c Commit) (Receipt, error) {
	commits := [1]Commit{c}
	var receipts [1]Receipt
	client := "" // only a new key takes from a client's share
	if c.IdempotencyKey != "" {
		client = clientFrom(ctx)
	}
	err := m.h.publish(client, commits[:], receipts[:])
	return receipts[0], err
}

func (m memStore) publishBatch(ctx context.Context, commits []Commit) ([]Receipt, error) {
	receipts := make([]Receipt, len(commits))
	if err := m.h.publish(clientFrom(ctx), commits, receipts); err != nil {
		return nil, err
	}
	return receipts, nil
}

// outcome reads the dedupe table: RememberedSince is the later of the
// hub's start and the dedupe window's start (now when dedupe is off).
func (m memStore) outcome(_ context.Context, key Key) (PublishOutcome, error) {
	h := m.h
	h.mu.RLock()
	defer h.mu.RUnlock()
	now := time.Now()
	o := PublishOutcome{RememberedSince: h.dedupe.rememberedSince(h.boot, now)}
	if e := h.dedupe.lookup(key.ID(), now); e != nil {
		o.Applied, o.Receipt, o.Topics = true, e.receipt, e.topics
	}
	return o, nil
}

func (m memStore) boundsLocked() (oldest, head uint64) {
	return m.h.ring.oldest(), m.h.ring.head
}

// drainLocked publishes ServerStatus(DRAINING): streams end after it.
func (m memStore) drainLocked() { m.h.publishStatusLocked(m.h.nowLocked()) }

func (m memStore) drainHeadLocked(head uint64) uint64 { return head }

func (m memStore) classify(_ context.Context, req Request) (classification, error) {
	h := m.h
	var c classification
	h.mu.RLock()
	defer h.mu.RUnlock()
	c.oldest, c.head = m.boundsLocked()
	c.reason, c.outcome = classify(req, h.epoch, c.oldest, c.head, h.ring.get, h.fingerprintLocked)
	if c.reason == ringcastv1.Reason_REASON_UNSPECIFIED && req.SinceFact > 0 {
		c.partial = h.ring.get(req.SinceSeq)
	}
	return c, nil
}

// seqAtTime searches the ring, which is the whole log: events at or after
// t that left it are lost (ErrTooOld).
func (m memStore) seqAtTime(_ context.Context, t time.Time) (uint64, error) {
	h := m.h
	h.mu.RLock()
	seq, ok := h.ring.seqAtTime(t, true)
	h.mu.RUnlock()
	if !ok {
		return 0, ErrTooOld
	}
	return seq, nil
}

func (m memStore) refusedTimeRange(context.Context, *classification) error { return nil }

// lappedLocked covers what left the ring when the stream's filter would
// have skipped all of it, and reads on from oldest.
func (m memStore) lappedLocked(s *stream, oldest uint64) {
	h := m.h
	if s.match != nil && !h.ring.evicted.missed(s.req.Topics, s.next) {
		s.next, s.coveredAt, s.coveredFP = oldest, h.ring.evicted.lastAt, h.fingerprintLocked(oldest-1)
	}
}

// behind ends the stream with ResyncRequired(SUBSCRIBER_LAGGING): what
// left the ring is gone.
func (m memStore) behind(_ context.Context, s *stream, oldest, head uint64) ([]*Event, error) {
	m.h.cfg.Observer.Lagged(s.req.Face)
	return nil, s.resync(ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING, s.next-1, oldest, head)
}

// replicaStatus sends nothing: statuses are in the ring.
func (m memStore) replicaStatus(*stream) error { return nil }
