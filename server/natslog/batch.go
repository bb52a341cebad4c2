package natslog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/hub"
)

var _ hub.BatchLog = (*Log)(nil)

// JetStream's API error codes that AppendBatch tells apart.
const (
	errAtomicDisabled  = 10174 // the stream does not allow atomic publish
	errAtomicTooLarge  = 10199 // more messages than the server's batch limit
	errAtomicDuplicate = 10201 // a Nats-Msg-Id of the batch is in the duplicate window
	errStreamMismatch  = 10060 // Nats-Expected-Stream names another stream
)

// batchAttempts bounds how often AppendBatch looks up keys and publishes
// again when other publishers keep adding keys of the batch meanwhile.
const batchAttempts = 3

// AppendBatch implements hub.BatchLog with JetStream's atomic batch
// publish: the new commits are one batch (headers Nats-Batch-Id,
// Nats-Batch-Sequence, and Nats-Batch-Commit on the last), which the stream
// stores whole, with consecutive sequences in order, or not at all. Each
// keyed commit carries its key as Nats-Msg-Id, so later publishes with that
// key are duplicates.
//
// JetStream refuses a whole batch in which any Nats-Msg-Id is already in its
// duplicate window, without saying which. So a key repeated inside the batch
// is resolved here first (the earlier commit's receipt); and when JetStream
// refuses the batch for a duplicate, the stream is read back for the
// batch's keys (lookupKeys): the keys found get their original receipts;
// keys it does not find that JetStream still knows (their original
// discarded by the stream's limits) get the original seq from JetStream
// itself, as Append does (resolveDiscarded); and the remaining commits are
// published again as a new batch.
//
// The stream must allow atomic publish (AllowAtomicPublish, which Open sets
// on a stream it creates); otherwise AppendBatch returns an error wrapping
// hub.ErrBatchUnsupported that says what to change.
func (l *Log) AppendBatch(ctx context.Context, at time.Time, commits []hub.Commit) ([]hub.Receipt, error) {
	if err := l.checkAtomic(ctx); err != nil {
		return nil, err
	}
	rs := make([]hub.Receipt, len(commits))
	done := make([]bool, len(commits)) // rs[i] is known: a duplicate
	repeat := make(map[int]int)        // commit index -> earlier commit with its key
	firstWith := make(map[string]int)
	for i, c := range commits {
		if c.IdempotencyKey == "" {
			continue
		}
		if j, ok := firstWith[c.IdempotencyKey]; ok {
			repeat[i] = j
			done[i] = true
			continue
		}
		firstWith[c.IdempotencyKey] = i
	}
	for attempt := 1; ; attempt++ {
		var pending []int
		for i := range commits {
			if !done[i] {
				pending = append(pending, i)
			}
		}
		if len(pending) == 0 {
			break
		}
		known := l.head.Load()
		last, err := l.publishBatch(ctx, at, commits, pending)
		if err == nil {
			if first := last - uint64(len(pending)-1); first <= known {
				return nil, l.replacedAck(first, known) // see replacedAck
			}
			l.saw(last)
			for k, i := range pending {
				rs[i] = hub.Receipt{Seq: last - uint64(len(pending)-1-k), Time: at}
			}
			break
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != errAtomicDuplicate || attempt == batchAttempts {
			return nil, err
		}
		keys := make(map[string]bool)
		for _, i := range pending {
			if k := commits[i].IdempotencyKey; k != "" {
				keys[k] = true
			}
		}
		found, err := l.lookupKeys(ctx, keys)
		if err != nil {
			return nil, err
		}
		if err := l.resolveDiscarded(ctx, at, keys, found); err != nil {
			return nil, err
		}
		for _, i := range pending {
			if r, ok := found[commits[i].IdempotencyKey]; ok {
				r.Duplicate = true
				rs[i], done[i] = r, true
			}
		}
	}
	for i, j := range repeat {
		rs[i] = rs[j]
		rs[i].Duplicate = true
	}
	return rs, nil
}

// checkAtomic returns nil when the stream allows atomic publish. A stream
// that did not at Open is asked again, so an operator's change takes effect
// without a restart.
func (l *Log) checkAtomic(ctx context.Context) error {
	l.mu.Lock()
	ok := l.atomic
	l.mu.Unlock()
	if ok {
		return nil
	}
	info, err := l.Info(ctx)
	if err != nil {
		return err
	}
	if !info.Config.AllowAtomicPublish {
		return fmt.Errorf("%w (JetStream stream %q does not allow atomic publish: set allow_atomic on it, which needs nats-server 2.12 or later)",
			hub.ErrBatchUnsupported, l.opts.Stream)
	}
	l.mu.Lock()
	l.atomic = true
	l.mu.Unlock()
	return nil
}

// pubAck is JetStream's answer to a publish, with the batch fields the
// client's PubAck lacks.
type pubAck struct {
	Stream    string              `json:"stream"`
	Seq       uint64              `json:"seq"`
	Duplicate bool                `json:"duplicate"`
	BatchID   string              `json:"batch"`
	Count     int                 `json:"count"`
	Error     *jetstream.APIError `json:"error"`
}

// publishBatch publishes commits[i] for i in pending as one atomic batch and
// returns the stream sequence of the last. Only the commit message asks for
// an answer; JetStream abandons a batch that misses a message.
func (l *Log) publishBatch(ctx context.Context, at time.Time, commits []hub.Commit, pending []int) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	id := nats.NewInbox()[len(nats.InboxPrefix):] // a unique id of ≤ 64 characters
	for k, i := range pending {
		m, err := l.message(at, commits[i])
		if err != nil {
			return 0, err
		}
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
		if k < len(pending)-1 {
			if err := l.nc.PublishMsg(m); err != nil {
				return 0, err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := l.nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			return 0, err
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return 0, fmt.Errorf("atomic batch publish: bad answer: %w", err)
		}
		if ack.Error != nil {
			switch ack.Error.ErrorCode {
			case errAtomicDisabled:
				l.mu.Lock()
				l.atomic = false
				l.mu.Unlock()
				return 0, fmt.Errorf("%w (JetStream stream %q does not allow atomic publish: set allow_atomic on it)", hub.ErrBatchUnsupported, l.opts.Stream)
			case errAtomicTooLarge:
				return 0, fmt.Errorf("%w (%d new commits: %s; raise the server's jetstream batch limit max_msgs)", hub.ErrBatchUnsupported, len(pending), ack.Error.Description)
			}
			return 0, fmt.Errorf("atomic batch publish: %w", ack.Error)
		}
		if ack.BatchID != id || ack.Count != len(pending) || ack.Seq < uint64(len(pending)) {
			return 0, fmt.Errorf("atomic batch publish: answer %+v for a batch of %d", ack, len(pending))
		}
		return ack.Seq, nil
	}
	return 0, errors.New("atomic batch publish: empty batch")
}

// lookupKeys finds, newest first, the commits of the stream's duplicate
// window that carry one of keys as Nats-Msg-Id, and returns their receipts.
// It reads the window back from the stream's last message, a chunk at a
// time, until every key is found, a message is older than the window, or
// JetStream says none of the keys still missing is in its window (anyKnown,
// asked after the 1st, 2nd, 4th, 8th… chunk and after each chunk that found
// a key): a retry is found near the stream's end, and new keys beside it do
// not make the whole window read. Each request has the Log's timeout; ctx
// bounds the whole.
func (l *Log) lookupKeys(ctx context.Context, keys map[string]bool) (map[string]hub.Receipt, error) {
	info, err := l.Info(ctx)
	if err != nil {
		return nil, err
	}
	window := info.Config.Duplicates
	oldest := time.Now().Add(-window)
	first, last := info.State.FirstSeq, info.State.LastSeq
	found := make(map[string]hub.Receipt)
	const chunk = 256
	for n, end := 1, last; end >= first && end > 0 && len(found) < len(keys); n++ {
		from := max(first, end-min(end, chunk-1), 1)
		older, had := false, len(found)
		rctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
		err := l.directGet(rctx, from, int(end-from+1), func(seq uint64, hdr nats.Header, data []byte) error {
			if seq > end {
				return nil
			}
			if ts, err := time.Parse(time.RFC3339Nano, hdr.Get(jetstream.TimeStampHeaer)); err == nil && ts.Before(oldest) {
				older = true
				return nil
			}
			k := hdr.Get(jetstream.MsgIDHeader)
			if !keys[k] {
				return nil
			}
			ev, err := decode(l.epoch, seq, hdr, data)
			if err != nil {
				return err
			}
			if r, ok := found[k]; !ok || r.Seq < seq {
				found[k] = hub.Receipt{Seq: seq, Time: ev.Time} // the newest
			}
			return nil
		})
		cancel()
		if err != nil {
			return nil, err
		}
		if older || from == first || len(found) == len(keys) {
			break
		}
		if len(found) > had || n&(n-1) == 0 {
			var missing []string
			for k := range keys {
				if _, ok := found[k]; !ok {
					missing = append(missing, k)
				}
			}
			if known, err := l.anyKnown(ctx, missing); err == nil && !known {
				break
			}
		}
		end = from - 1
	}
	return found, nil
}

// resolveDiscarded adds to found the receipts of the keys lookupKeys did
// not find but JetStream still holds in its duplicate window: keys whose
// original the stream's limits (max messages, bytes or age) discarded, or
// that the read-back did not reach. JetStream refuses every batch holding
// such a key, so each is answered as Append answers it: a duplicate with
// the original's seq (from keySeq, which stores nothing) and the original's
// time if the stream still holds it, else the retry's. The remaining
// commits are then published as a batch, whole or not at all.
func (l *Log) resolveDiscarded(ctx context.Context, at time.Time, keys map[string]bool, found map[string]hub.Receipt) error {
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
		t, err := l.originalTime(ctx, seq, at)
		if err != nil {
			return err
		}
		found[k] = hub.Receipt{Seq: seq, Time: t}
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
//     message is replicated, and a message refused there stalls the
//     stream's publishes (nats-server 2.15).
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
	resp, err := l.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return 0, false, err
	}
	var ack pubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, false, fmt.Errorf("key lookup: bad answer: %w", err)
	}
	switch {
	case ack.Error != nil:
		return 0, false, nil
	case !ack.Duplicate:
		// Cannot happen (no stream meets the expectation); if it did, an
		// empty message was stored: say so rather than hide it.
		return 0, false, fmt.Errorf("key lookup: stored at seq %d", ack.Seq)
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
	resp, err := l.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return true, err
	}
	var ack pubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return true, fmt.Errorf("duplicate probe: bad answer: %w", err)
	}
	if ack.Error != nil && ack.Error.ErrorCode == errStreamMismatch {
		return false, nil
	}
	if ack.Error == nil {
		// Cannot happen (the commit expects another stream); if it did,
		// empty messages were stored: say so rather than hide it.
		return true, fmt.Errorf("duplicate probe: stored at seq %d", ack.Seq)
	}
	return true, nil
}
