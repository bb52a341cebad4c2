package natslog

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// Resolving the keys of a batch JetStream refused for a duplicate (see
// AppendBatch): read the stream back for them, and ask JetStream about
// those the read-back cannot find.

// lookupTimeouts bounds a lookupKeys read-back: that many times the Log's
// timeout.
const lookupTimeouts = 4

// cutoffMargin is read back past the duplicate window's age, for the
// clocks of a cluster's NATS servers, which stamp messages and answer
// StreamInfo, to differ by.
const cutoffMargin = 2 * time.Second

// stored is what the stream holds of a key's original commit: its receipt
// and its request's digest ("" when unknown: stored without one, or
// discarded).
type stored struct {
	hub.Receipt
	digest string
}

// lookupKeys finds, newest first, the commits of the stream's duplicate
// window that carry one of keys (msgID) as Nats-Msg-Id, and returns what
// they hold of their publish.
// It reads the window back from the stream's last message, a chunk at a
// time, until every key is found, a message is older than the window (by
// the NATS server's clock: the StreamInfo's time less the window and
// cutoffMargin), or JetStream says none of the keys still missing is in its
// window (anyKnown, asked after the 1st, 2nd, 4th, 8th… chunk and after
// each chunk that found a key): a retry is found near the stream's end, and
// new keys beside it do not make the whole window read.
//
// A direct get may be answered by any replica of the stream, one behind
// the leader included, which lacks the newest messages: a chunk whose
// newest message is not the one at its end (the stream's last seq, as the
// leader said, for the first chunk) stops the read-back, since what that
// replica does not hold would be missed. So does the bound on the whole
// read-back (lookupTimeouts). Keys found are right either way; the caller
// asks JetStream's leader about those not found (resolveDiscarded).
// Each request has the Log's timeout, and the read-back takes one of the
// Log's read slots, as Read does.
func (l *Log) lookupKeys(ctx context.Context, keys map[string]bool) (map[string]stored, error) {
	select {
	case l.reads <- struct{}{}:
		defer func() { <-l.reads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	info, err := l.Info(ctx)
	if err != nil {
		return nil, err
	}
	var oldest time.Time // zero: no cutoff by age
	if !info.TimeStamp.IsZero() {
		oldest = info.TimeStamp.Add(-info.Config.Duplicates - cutoffMargin)
	}
	bound, cancelBound := context.WithTimeout(ctx, lookupTimeouts*l.opts.Timeout)
	defer cancelBound()
	first, last := info.State.FirstSeq, info.State.LastSeq
	found := make(map[string]stored)
	const chunk = 256
	for n, end := 1, last; end >= first && end > 0 && len(found) < len(keys); n++ {
		from := max(first, end-min(end, chunk-1), 1)
		older, had, newest := false, len(found), uint64(0)
		rctx, cancel := context.WithTimeout(bound, l.opts.Timeout)
		err := l.directGet(rctx, from, int(end-from+1), func(seq uint64, hdr nats.Header, data []byte) error {
			if seq > end {
				return nil
			}
			newest = max(newest, seq)
			if ts, err := time.Parse(time.RFC3339Nano, hdr.Get(jetstream.TimeStampHeaer)); err == nil && ts.Before(oldest) {
				older = true
				return nil
			}
			k := hdr.Get(jetstream.MsgIDHeader)
			if !keys[k] {
				return nil
			}
			ev, err := l.decode(seq, hdr, data)
			if err != nil {
				return err
			}
			if r, ok := found[k]; !ok || r.Seq < seq {
				found[k] = stored{hub.Receipt{Seq: seq, Time: ev.Time}, hdr.Get(digestHeader)} // the newest
			}
			return nil
		})
		cancel()
		if err != nil && ctx.Err() == nil && bound.Err() != nil {
			break // the read-back's bound: the caller asks about the rest
		}
		if err != nil {
			return nil, err
		}
		if older || newest < end || from == first || len(found) == len(keys) {
			break
		}
		if len(found) > had || n&(n-1) == 0 {
			var missing []string
			for k := range keys {
				if _, ok := found[k]; !ok {
					missing = append(missing, k)
				}
			}
			if known, err := l.anyKnown(bound, missing); err == nil && !known {
				break
			}
		}
		end = from - 1
	}
	return found, nil
}

// resolveDiscarded adds to found the originals of the keys lookupKeys did
// not find but JetStream still holds in its duplicate window: keys whose
// original the stream's limits (max messages, bytes or age) discarded, or
// that the read-back did not reach. JetStream refuses every batch holding
// such a key, so each is answered as Append answers it: a duplicate with
// the original's seq (from keySeq, which stores nothing) and the original's
// time if the stream still holds it, else the retry's. The remaining
// commits are then published as a batch, whole or not at all.
func (l *Log) resolveDiscarded(ctx context.Context, at time.Time, keys map[string]bool, found map[string]stored) error {
	var missing []string
	for k := range keys {
		if _, ok := found[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if known, err := l.anyKnown(ctx, missing); err != nil || !known {
		return err
	}
	info, err := l.Info(ctx)
	if err != nil {
		return err
	}
	raft := info.Cluster != nil && info.Cluster.RaftGroup != ""
	for _, k := range missing {
		seq, ok, err := l.keySeq(ctx, k, raft)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t, digest, ok, err := l.original(ctx, seq)
		if err != nil {
			return err
		}
		if !ok {
			t = at // discarded by the stream's limits: its time is gone
		}
		found[k] = stored{hub.Receipt{Seq: seq, Time: t}, digest}
	}
	return nil
}

// neverLastSeq is a last sequence no stream reaches.
const neverLastSeq = "9223372036854775807"

// keySeq asks JetStream for the seq of the message whose Nats-Msg-Id is key
// in its duplicate window, and stores nothing: it sends one empty message
// with key as Nats-Msg-Id and an expectation no stream meets, one that
// JetStream checks after the duplicate window. So JetStream answers a
// known key as a duplicate with the original's seq (ok), and refuses any
// other key for the expectation. Which expectation depends on where the
// stream stores (raft: the stream has a Raft group, as in a cluster):
//
//   - with a Raft group, the stream's leader checks the duplicate window
//     and then Nats-Expected-Last-Sequence before it proposes the message;
//     the last-message-id expectation would be checked only once the
//     message is replicated, and with nats-server 2.15.3 a message refused
//     there left the stream's next publishes unanswered for seconds.
//   - stored locally, the server checks Nats-Expected-Last-Sequence
//     before the duplicate window, but Nats-Expected-Last-Msg-Id after it;
//     a fresh inbox id is no message's id.
//
// A key still being stored by another publish is refused too (not ok): the
// caller's batch then meets it again.
func (l *Log) keySeq(ctx context.Context, key string, raft bool) (seq uint64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	m := nats.NewMsg(l.subject)
	m.Header.Set(jetstream.ExpectedStreamHeader, l.opts.Stream)
	m.Header.Set(jetstream.MsgIDHeader, key)
	if raft {
		m.Header.Set(jetstream.ExpectedLastSeqHeader, neverLastSeq)
	} else {
		m.Header.Set(jetstream.ExpectedLastMsgIDHeader, nats.NewInbox())
	}
	ack, err := l.request(ctx, m, "key lookup")
	if err != nil {
		return 0, false, err
	}
	switch {
	case ack.Error != nil:
		return 0, false, nil
	case !ack.Duplicate:
		// Cannot happen (no stream meets the expectation); if it did, an
		// empty message was stored: say so rather than hide it.
		err := fmt.Errorf("key lookup: stored at seq %d", ack.Seq)
		l.unsure(err)
		return 0, false, err
	}
	return ack.Seq, true, nil
}

// probeGroup bounds the keys of one anyKnown batch, below JetStream's
// default atomic batch limit (1,000).
const probeGroup = 500

// anyKnown reports whether JetStream holds any of keys in its duplicate
// window, and stores nothing: each group of keys is sent as an atomic batch
// of empty messages with those Nats-Msg-Ids, whose commit message expects
// another stream. JetStream checks a batch's messages in order when it
// commits, so it refuses the batch for a duplicate key (10201) when there
// is one, and else for the commit's expected stream, and stages nothing
// either way. Any other answer counts as known: the caller then reads on.
func (l *Log) anyKnown(ctx context.Context, keys []string) (bool, error) {
	for len(keys) > 0 {
		group := keys[:min(len(keys), probeGroup)]
		keys = keys[len(group):]
		known, err := l.probe(ctx, group)
		if err != nil || known {
			return true, err
		}
	}
	return false, nil
}

func (l *Log) probe(ctx context.Context, keys []string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	id := nats.NewInbox()[len(nats.InboxPrefix):]
	for i, k := range keys {
		m := nats.NewMsg(l.subject)
		m.Header.Set(jetstream.MsgIDHeader, k)
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if err := l.nc.PublishMsg(m); err != nil {
			return true, err
		}
	}
	m := nats.NewMsg(l.subject)
	m.Header.Set(jetstream.ExpectedStreamHeader, l.opts.Stream+".probe") // never a stream's name: '.' is not allowed in one
	m.Header.Set("Nats-Batch-Id", id)
	m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(len(keys)+1))
	m.Header.Set("Nats-Batch-Commit", "1")
	ack, err := l.request(ctx, m, "duplicate probe")
	if err != nil {
		return true, err
	}
	if ack.Error != nil && ack.Error.ErrorCode == errStreamMismatch {
		return false, nil
	}
	if ack.Error == nil {
		// Cannot happen (the commit expects another stream); if it did,
		// empty messages were stored: say so rather than hide it.
		err := fmt.Errorf("duplicate probe: stored at seq %d", ack.Seq)
		l.unsure(err)
		return true, err
	}
	return true, nil
}
