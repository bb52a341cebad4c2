package natslog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

var (
	_ hub.BatchLog        = (*Store)(nil)
	_ hub.OutcomeLog      = (*Store)(nil)
	_ hub.DedupeLog       = (*Store)(nil)
	_ hub.LimitsLog       = (*Store)(nil)
	_ hub.AvailabilityLog = (*Store)(nil)
)

// NewStore is l as a Store, on the connection nc it was opened on (nil:
// reconnections are not watched).
func NewStore(l *Log, nc *nats.Conn) *Store {
	return &Store{Log: l, nc: nc, now: time.Now}
}

// Store is the JetStream store as the hub and the server's readiness see
// it: its Log, whose appends' errors name the store's condition ("store
// full: …", "store unavailable: …") rather than the NATS client's, and
// whose readiness policy is its own: an append refused as full keeps the
// store unavailable (see Available) even where the Log's own check sees
// room, since JetStream refuses by the size of the commit at hand, which
// no check can know, and storage exhausted shows in no limit. Every other
// method is the Log's.
type Store struct {
	*Log
	nc  *nats.Conn
	now func() time.Time

	mu        sync.Mutex
	full      error     // the last append refused as full; nil once one is stored
	fullAt    time.Time // when the store was first refused as full, since then
	fullConns uint64    // the NATS reconnects by then
	fullMark  storeMark // the store seen at the first check after it
	fullSeen  bool      // fullMark is known
}

// storeFullHold is how long an append refused as full keeps readiness off
// at most: the next refused append turns it off again.
const storeFullHold = 30 * time.Second

// storeMark is what shows that a full store may take commits again: the
// account's storage use falling (storage exhausted), or the stream's
// contents or limits changing (its own limits).
type storeMark struct {
	used              uint64
	bytes, msgs       uint64
	firstSeq, lastSeq uint64
	maxBytes, maxMsgs int64
}

func (l *Store) Append(ctx context.Context, at time.Time, c hub.Commit) (hub.Receipt, error) {
	r, err := l.Log.Append(ctx, at, c)
	return r, l.note(err)
}

func (l *Store) AppendBatch(ctx context.Context, at time.Time, commits []hub.Commit) ([]hub.Receipt, error) {
	rs, err := l.Log.AppendBatch(ctx, at, commits)
	return rs, l.note(err)
}

// note describes an append's error by the store's condition and
// remembers whether the store refused it as full.
func (l *Store) note(err error) error {
	err = StoreError(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.full = nil
	case errors.Is(err, ErrStoreFull):
		if l.full == nil || errors.Is(l.full, ErrStorageExhausted) != errors.Is(err, ErrStorageExhausted) {
			l.fullAt, l.fullSeen = l.now(), false
			if l.nc != nil {
				l.fullConns = l.nc.Stats().Reconnects
			}
		}
		l.full = err
	}
	return err
}

// Available reports whether the store takes commits: the Log's own check
// and, after an append refused as full, whether the store changed since:
// for want of storage, its use fell; by the stream's limits, the stream's
// contents or limits changed. Either way the refusal counts for
// storeFullHold at most, and not past a reconnection to NATS.
func (l *Store) Available(ctx context.Context) error {
	if err := l.Log.Available(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	full := l.full
	if full != nil && (l.now().Sub(l.fullAt) >= storeFullHold || l.nc != nil && l.nc.Stats().Reconnects != l.fullConns) {
		l.full, full = nil, nil
	}
	l.mu.Unlock()
	if full == nil {
		return nil
	}
	storage := errors.Is(full, ErrStorageExhausted)
	var mark storeMark
	if storage {
		used, err := l.StoreUsed(ctx)
		if err != nil {
			return err
		}
		mark.used = used
	} else {
		info, err := l.Info(ctx)
		if err != nil {
			return StoreError(err)
		}
		mark.bytes, mark.msgs = info.State.Bytes, info.State.Msgs
		mark.firstSeq, mark.lastSeq = info.State.FirstSeq, info.State.LastSeq
		mark.maxBytes, mark.maxMsgs = info.Config.MaxBytes, info.Config.MaxMsgs
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.full == nil: // an append was stored meanwhile
	case errors.Is(l.full, ErrStorageExhausted) != storage: // refused otherwise meanwhile
	case !l.fullSeen:
		l.fullMark, l.fullSeen = mark, true
	case storage && mark.used < l.fullMark.used, !storage && mark != l.fullMark:
		l.full = nil
	}
	return l.full
}
