package natslog

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// timeBatch is how many messages SeqAtTime asks for at the stream's time
// lookup: the commits appended at the time but stamped just before it are
// stepped over from this first answer.
const timeBatch = 16

// SeqAtTime implements hub.Log by the stream's own time index: a direct
// get by start_time answers the first message JetStream stored at or after
// t. A commit's event time is stamped by the publishing replica just
// before the append, so (with the replica's and the NATS servers' clocks
// in step) every commit stamped at or after t is stored at or after t; the
// few stored at or after t but stamped before it (appended across t) are
// stepped over. When the first message stored at or after t is the
// stream's oldest and its seq is above 1, the stream's limits may have
// discarded commits at or after t: ErrTooOld.
func (l *Log) SeqAtTime(ctx context.Context, t time.Time) (uint64, error) {
	first, last, err := l.Range(ctx)
	if err != nil {
		return 0, err
	}
	select {
	case l.reads <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	tctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	var evs []*hub.Event
	err = l.directGetBy(tctx, struct {
		StartTime time.Time `json:"start_time"`
		NextFor   string    `json:"next_by_subj"`
		Batch     int       `json:"batch"`
	}{t.UTC(), l.subject, timeBatch}, func(seq uint64, hdr nats.Header, data []byte) error {
		ev, err := l.decode(seq, hdr, data)
		if err != nil {
			return err
		}
		evs = append(evs, ev)
		return nil
	})
	cancel()
	<-l.reads
	if err != nil {
		return 0, l.condition(err)
	}
	if len(evs) == 0 {
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
	if evs[0].Seq <= first && first > 1 {
		return 0, hub.ErrTooOld
	}
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
