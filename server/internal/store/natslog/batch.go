package natslog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
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
	if err := l.refuseUnbooked(); err != nil {
		return nil, err
	}
	if err := l.markFailure(); err != nil {
		return nil, err
	}
	rs := make([]hub.Receipt, len(commits))
	done := make([]bool, len(commits)) // rs[i] is known: a duplicate
	repeat := make(map[int]int)        // commit index -> earlier commit with its key
	firstWith := make(map[string]int)
	ids := make([]string, len(commits)) // msgID of each keyed commit
	for i, c := range commits {
		if c.IdempotencyKey == "" {
			continue
		}
		ids[i] = msgID(c.Key())
		if j, ok := firstWith[ids[i]]; ok {
			if c.Digest() != commits[j].Digest() {
				return nil, hub.KeyReused(i, len(commits))
			}
			repeat[i] = j
			done[i] = true
			continue
		}
		firstWith[ids[i]] = i
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
		last, crcs, err := l.publishBatch(ctx, at, commits, pending)
		l.unsure(err)
		if err == nil {
			first := last - uint64(len(pending)-1)
			if first <= known {
				err := l.replacedAck(first, known) // see replacedAck
				l.unsure(err)
				return nil, err
			}
			l.saw(last)
			for k, i := range pending {
				l.echo(first+uint64(k), at, commits[i], crcs[k])
			}
			l.raise(last)
			for k, i := range pending {
				rs[i] = hub.Receipt{Seq: last - uint64(len(pending)-1-k), Time: at}
			}
			break
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != errAtomicDuplicate || attempt == batchAttempts {
			return nil, l.condition(err)
		}
		keys := make(map[string]bool)
		for _, i := range pending {
			if k := ids[i]; k != "" {
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
			o, ok := found[ids[i]]
			if !ok {
				continue
			}
			if o.digest != "" && o.digest != digestText(commits[i].Digest()) {
				return nil, hub.KeyReused(i, len(commits))
			}
			o.Duplicate = true
			rs[i], done[i] = o.Receipt, true
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

// publishBatch publishes commits[i] for i in pending as one atomic batch and
// returns the stream sequence of the last, and each message's checksum.
// Only the commit message asks for an answer; JetStream abandons a batch
// that misses a message.
func (l *Log) publishBatch(ctx context.Context, at time.Time, commits []hub.Commit, pending []int) (uint64, []uint32, error) {
	ctx, cancel := l.appendContext(ctx)
	defer cancel()
	id := nats.NewInbox()[len(nats.InboxPrefix):] // a unique id of ≤ 64 characters
	crcs := make([]uint32, len(pending))
	for k, i := range pending {
		m, crc, err := l.message(at, commits[i])
		if err != nil {
			return 0, nil, err
		}
		crcs[k] = crc
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
		if k < len(pending)-1 {
			if err := l.nc.PublishMsg(m); err != nil {
				return 0, nil, err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		ack, err := l.request(ctx, m, "atomic batch publish")
		if err != nil {
			return 0, nil, err
		}
		if ack.Error != nil {
			switch ack.Error.ErrorCode {
			case errAtomicDisabled:
				l.mu.Lock()
				l.atomic = false
				l.mu.Unlock()
				return 0, nil, fmt.Errorf("%w (JetStream stream %q does not allow atomic publish: set allow_atomic on it)", hub.ErrBatchUnsupported, l.opts.Stream)
			case errAtomicTooLarge:
				return 0, nil, fmt.Errorf("%w (%d new commits: %s; raise the server's jetstream batch limit max_msgs)", hub.ErrBatchUnsupported, len(pending), ack.Error.Description)
			}
			return 0, nil, fmt.Errorf("atomic batch publish: %w", ack.Error)
		}
		if ack.BatchID != id || ack.Count != len(pending) || ack.Seq < uint64(len(pending)) {
			return 0, nil, fmt.Errorf("atomic batch publish: answer %+v for a batch of %d", ack, len(pending))
		}
		return ack.Seq, crcs, nil
	}
	return 0, nil, errors.New("atomic batch publish: empty batch")
}
