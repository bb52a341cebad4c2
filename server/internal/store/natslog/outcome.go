package natslog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

var _ hub.OutcomeLog = (*Log)(nil)

// Outcome implements hub.OutcomeLog from JetStream itself, not from what
// this replica has received, so that every replica, one behind the stream
// included, and every restart answer alike:
//
//   - whether the key is in the stream's duplicate window, and the seq of
//     its message, comes from JetStream's leader (keySeq, which stores
//     nothing);
//   - the commit — its event time and topics — is read from the stream at
//     that seq by the leader (leaderGet). A commit the stream's limits
//     discarded is answered as unknown: RememberedSince is then after it.
//
// RememberedSince is, by the NATS server's clock, the later of the start
// of the duplicate window (the StreamInfo's time, plus the time the
// questions took, less the window, plus cutoffMargin for the clocks of a
// cluster's servers) and, when the stream's limits discarded messages,
// just after the oldest message it still holds (just after the last one
// when it holds none): JetStream forgets the keys of discarded messages
// when it restarts. The question takes one of the Log's read slots, as
// Read does.
func (l *Log) Outcome(ctx context.Context, key hub.Key) (hub.PublishOutcome, error) {
	id := msgID(key)
	select {
	case l.reads <- struct{}{}:
		defer func() { <-l.reads }()
	case <-ctx.Done():
		return hub.PublishOutcome{}, ctx.Err()
	}
	began := time.Now()
	info, err := l.Info(ctx)
	if err != nil {
		return hub.PublishOutcome{}, l.condition(err)
	}
	if err := l.same(info); err != nil {
		return hub.PublishOutcome{}, err
	}
	raft := info.Cluster != nil && info.Cluster.RaftGroup != ""
	seq, known, err := l.keySeq(ctx, id, raft)
	if err != nil {
		return hub.PublishOutcome{}, l.condition(err)
	}
	o := hub.PublishOutcome{RememberedSince: rememberedSince(info, time.Since(began))}
	if !known || seq < info.State.FirstSeq {
		return o, nil
	}
	gctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	hdr, data, err := l.leaderGet(gctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Discarded since the stream's state was read: ask again, so
		// that RememberedSince is after it.
		if info, err = l.Info(ctx); err != nil {
			return hub.PublishOutcome{}, l.condition(err)
		}
		o.RememberedSince = rememberedSince(info, time.Since(began))
		return o, nil
	}
	if err != nil {
		return hub.PublishOutcome{}, l.condition(err)
	}
	if got := hdr.Get(jetstream.MsgIDHeader); got != id {
		return hub.PublishOutcome{}, fmt.Errorf("JetStream stream %q: the duplicate window names seq %d for Nats-Msg-Id %q, but that message carries %q", l.opts.Stream, seq, id, got)
	}
	ev, err := l.decode(seq, hdr, data)
	if err != nil {
		return hub.PublishOutcome{}, err
	}
	o.Applied = true
	o.Receipt = hub.Receipt{Seq: seq, Time: ev.Time}
	o.Topics = hub.CommitTopics(ev.Commit().GetFacts())
	return o, nil
}

// rememberedSince is Outcome's RememberedSince for info, asked took
// before the duplicate window was.
func rememberedSince(info *jetstream.StreamInfo, took time.Duration) time.Time {
	now := info.TimeStamp
	if now.IsZero() {
		now = time.Now() // a server too old to say: this replica's clock
	}
	since := now.Add(took - info.Config.Duplicates + cutoffMargin)
	s := info.State
	var oldest time.Time // zero: nothing discarded
	switch {
	case s.Msgs == 0 && s.LastSeq > 0:
		oldest = s.LastTime // every message discarded
	case s.FirstSeq > 1:
		oldest = s.FirstTime
	}
	if !oldest.IsZero() {
		if after := oldest.Add(time.Nanosecond); after.After(since) {
			since = after
		}
	}
	return since
}
