package natslog

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// timeBatch is how many commits SeqAtTime reads at a time while it steps
// over the commits appended across the time but stamped just before it.
const timeBatch = 16

// SeqAtTime implements hub.Log by the stream's own time index: a message
// get by start_time, answered by the stream's leader, finds the first
// message JetStream stored at or after t. A commit's event time is stamped
// by the publishing replica just before the append, so (with the
// replica's and the NATS servers' clocks in step) every commit stamped at
// or after t is stored at or after t; the few stored at or after t but
// stamped before it (appended across t) are then stepped over. When the
// first message stored at or after t is the stream's oldest and its seq is
// above 1, the stream's limits may have discarded commits at or after t:
// ErrTooOld.
func (l *Log) SeqAtTime(ctx context.Context, t time.Time) (uint64, error) {
	first, last, err := l.Range(ctx)
	if err != nil {
		return 0, err
	}
	gctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	seq, hdr, data, err := l.leaderGetBy(gctx, struct {
		StartTime time.Time `json:"start_time"`
		NextFor   string    `json:"next_by_subj"`
	}{t.UTC(), l.subject})
	cancel()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Nothing stored at or after t.
		if first > last && first > 1 {
			// It retains nothing: were its discarded commits before t?
			info, err := l.Info(ctx)
			if err != nil {
				return 0, l.condition(err)
			}
			if !info.State.LastTime.Before(t) {
				return 0, hub.ErrTooOld
			}
		}
		return last + 1, nil
	}
	if err != nil {
		return 0, l.condition(err)
	}
	if seq <= first && first > 1 {
		return 0, hub.ErrTooOld
	}
	ev, err := l.decode(seq, hdr, data)
	if err != nil {
		return 0, err
	}
	evs := []*hub.Event{ev}
	for {
		for _, ev := range evs {
			if !ev.Time.Before(t) {
				return ev.Seq, nil
			}
		}
		next := evs[len(evs)-1].Seq + 1
		if evs, err = l.Read(ctx, evs[:0], next, timeBatch); err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return next, nil
		}
	}
}
