package hub_test

import (
	"context"
	"sort"
	"sync"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// sliceLog is a Log held in memory that several hubs can share (replicas)
// and that outlives a hub (a restart): the seam's contract without NATS.
// The JetStream Log is tested against real NATS in server/internal/store/natslog.
type sliceLog struct {
	epoch uint64
	mu    sync.Mutex
	first uint64 // seq of evs[0]
	evs   []logged
	keys  map[string]hub.Receipt
	grew  chan struct{} // closed and replaced on every append
	// replaced makes Range and Follow fail with hub.ErrLogReplaced.
	replaced bool
}

// logged is a stored commit. Every read builds a fresh Event from it, as a
// Log decoding its storage does: a hub's ring takes ownership of the events
// it holds, so replicas must never share one.
type logged struct {
	seq   uint64
	at    time.Time
	facts []*ringcastv1.Fact
	tp    string
}

func (l *sliceLog) event(c logged) *hub.Event {
	return hub.NewCommitEvent(l.epoch, c.seq, c.at, c.facts, c.tp)
}

func newSliceLog(epoch uint64) *sliceLog {
	return &sliceLog{epoch: epoch, first: 1, keys: map[string]hub.Receipt{}, grew: make(chan struct{})}
}

func (l *sliceLog) Epoch() uint64 { return l.epoch }

func (l *sliceLog) Append(_ context.Context, at time.Time, c hub.Commit) (hub.Receipt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := c.IdempotencyKey
	if r, ok := l.keys[key]; ok && key != "" {
		r.Duplicate = true
		return r, nil
	}
	seq := l.first + uint64(len(l.evs))
	l.evs = append(l.evs, logged{seq: seq, at: at, facts: c.Facts, tp: c.Traceparent})
	r := hub.Receipt{Seq: seq, Time: at}
	if key != "" {
		l.keys[key] = r
	}
	close(l.grew)
	l.grew = make(chan struct{})
	return r, nil
}

// forget drops key from the log's duplicate window, as its expiry would.
func (l *sliceLog) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}

// trim drops the commits below seq, as a stream's limits would.
func (l *sliceLog) trim(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.first < seq && len(l.evs) > 0 {
		l.evs = l.evs[1:]
		l.first++
	}
}

func (l *sliceLog) Read(_ context.Context, dst []*hub.Event, from uint64, max int) ([]*hub.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < l.first {
		return dst, hub.ErrTooOld
	}
	for i := from - l.first; i < uint64(len(l.evs)) && max > 0; i++ {
		dst = append(dst, l.event(l.evs[i]))
		max--
	}
	return dst, nil
}

// replace makes the log answer as one deleted and created again.
func (l *sliceLog) replace() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replaced = true
	close(l.grew)
	l.grew = make(chan struct{})
}

func (l *sliceLog) Range(context.Context) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.replaced {
		return 0, 0, hub.ErrLogReplaced
	}
	return l.first, l.first + uint64(len(l.evs)) - 1, nil
}

func (l *sliceLog) Follow(ctx context.Context, from uint64, apply func(*hub.Event)) error {
	for {
		l.mu.Lock()
		if l.replaced {
			l.mu.Unlock()
			return hub.ErrLogReplaced
		}
		from = max(from, l.first)
		var batch []*hub.Event
		for i := from - l.first; i < uint64(len(l.evs)); i++ {
			batch = append(batch, l.event(l.evs[i]))
		}
		grew := l.grew
		l.mu.Unlock()
		for _, ev := range batch {
			apply(ev)
			from = ev.Seq + 1
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-grew:
		}
	}
}

// SeqAtTime finds the first commit at or after t by binary search (its
// commits' times never decrease in these tests).
func (l *sliceLog) SeqAtTime(_ context.Context, t time.Time) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.evs), func(i int) bool { return !l.evs[i].at.Before(t) })
	if i == 0 && l.first > 1 {
		return 0, hub.ErrTooOld
	}
	return l.first + uint64(i), nil
}
