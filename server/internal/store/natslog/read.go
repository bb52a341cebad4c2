package natslog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// Read implements hub.Log with batched direct gets (any replica of the
// stream answers, without creating a consumer): a block the stream holds
// whole is read once and shared through the block cache (blocks); the
// newest, partial block is read from from on. It falls back to a
// short-lived consumer (answered by the leader) when the direct get does
// not start at from — a replica behind, deleted messages, or from below the
// stream's first seq.
func (l *Log) Read(ctx context.Context, dst []*hub.Event, from uint64, max int) ([]*hub.Event, error) {
	n := len(dst)
	dst, err := l.read(ctx, dst, from, max)
	if err != nil {
		return dst, l.condition(err)
	}
	// A seq the stream holds but the read skipped is damage (checkGap).
	want := max64(from, 1)
	for _, ev := range dst[n:] {
		if ev.Seq > want {
			if err := l.checkGap(ctx, want, ev.Seq-1); err != nil {
				return dst[:n], err
			}
		}
		want = ev.Seq + 1
	}
	return dst, nil
}

func (l *Log) read(ctx context.Context, dst []*hub.Event, from uint64, max int) ([]*hub.Event, error) {
	select {
	case l.reads <- struct{}{}:
		defer func() { <-l.reads }()
	case <-ctx.Done():
		return dst, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	from = max64(from, 1)
	n := len(dst)
	idx := (from - 1) / blockSize
	if (idx+1)*blockSize <= l.head.Load() {
		// The block is whole in the stream: read it once for every cursor.
		evs, ok := l.blocks.get(ctx, idx, func(ctx context.Context, from uint64) []*hub.Event {
			evs, err := l.directRead(ctx, nil, from, blockSize)
			if err != nil {
				return nil
			}
			return evs
		})
		if ok {
			evs = evs[from-(idx*blockSize+1):]
			return append(dst, evs[:min(len(evs), max)]...), nil
		}
		// Not cacheable (deleted messages, say), but what the stream holds
		// from the block's start on: it answers a from it holds.
		if i, found := slices.BinarySearchFunc(evs, from, func(ev *hub.Event, seq uint64) int { return cmp.Compare(ev.Seq, seq) }); found {
			evs = evs[i:]
			return append(dst, evs[:min(len(evs), max)]...), nil
		}
	}
	// The stream's newest, partial block is not cached: read just what was
	// asked for.
	dst, err := l.directRead(ctx, dst, from, max)
	if err == nil && len(dst) > n && dst[n].Seq == from {
		return dst, nil
	}
	return l.consumerRead(ctx, dst[:n], from, max)
}

// directRead asks for up to max messages from seq from in one batched
// direct get and decodes them.
func (l *Log) directRead(ctx context.Context, dst []*hub.Event, from uint64, max int) ([]*hub.Event, error) {
	err := l.directGet(ctx, from, max, func(seq uint64, hdr nats.Header, data []byte) error {
		ev, err := l.decode(seq, hdr, data)
		if err != nil {
			return err
		}
		dst = append(dst, ev)
		return nil
	})
	return dst, err
}

// directGet asks for up to max messages from seq from in one batched
// direct get and calls each with every one until the end-of-batch status.
func (l *Log) directGet(ctx context.Context, from uint64, max int, each func(seq uint64, hdr nats.Header, data []byte) error) error {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
		Batch   int    `json:"batch"`
	}{from, l.subject, max})
	if err != nil {
		return err
	}
	inbox := nats.NewInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	l.directGets.Add(1)
	if err := l.nc.PublishRequest("$JS.API.DIRECT.GET."+l.opts.Stream, inbox, req); err != nil {
		return err
	}
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return err
		}
		if st := msg.Header.Get("Status"); st != "" {
			if st == "204" || st == "404" {
				return nil // end of batch, or nothing at or after from
			}
			return fmt.Errorf("direct get: %s %s", st, msg.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
		if err != nil {
			return fmt.Errorf("direct get: bad Nats-Sequence: %w", err)
		}
		l.directMsgs.Add(1)
		if err := each(seq, msg.Header, msg.Data); err != nil {
			return err
		}
	}
}

// original is what the commit at seq holds of its publish: its time, as
// its receipt said, and its request's digest (digestHeader; "" for a
// commit stored without one). ok is false when the stream's limits
// discarded it: both are gone.
func (l *Log) original(ctx context.Context, seq uint64) (t time.Time, digest string, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	hdr, data, err := l.leaderGet(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return time.Time{}, "", false, nil
	}
	if err != nil {
		return time.Time{}, "", false, err
	}
	ev, err := l.decode(seq, hdr, data)
	if err != nil {
		return time.Time{}, "", false, err
	}
	return ev.Time, hdr.Get(digestHeader), true, nil
}

// duplicate is the receipt for a retry of c (at, commit i of n) that
// JetStream answered with the seq of the original of its key: the
// original's time (the retry's, at, when the limits discarded it), or
// hub.KeyReused when the original was stored for other facts. An original
// stored without a digest, or discarded, cannot be compared and is taken
// as the same.
func (l *Log) duplicate(ctx context.Context, seq uint64, at time.Time, c hub.Commit, i, n int) (hub.Receipt, error) {
	t, digest, ok, err := l.original(ctx, seq)
	if err != nil {
		return hub.Receipt{}, err
	}
	if !ok {
		t = at
	}
	if digest != "" && digest != digestText(c.Digest()) {
		return hub.Receipt{}, hub.KeyReused(i, n)
	}
	return hub.Receipt{Seq: seq, Time: t, Duplicate: true}, nil
}

// leaderGet reads the message at seq through JetStream's message get API,
// which the stream's leader answers (a direct get may be answered by any
// replica). It returns jetstream.ErrMsgNotFound when the stream does not
// hold seq.
func (l *Log) leaderGet(ctx context.Context, seq uint64) (nats.Header, []byte, error) {
	_, hdr, data, err := l.leaderGetBy(ctx, struct {
		Seq uint64 `json:"seq"`
	}{seq})
	return hdr, data, err
}

// leaderGetBy sends the message get request q (its JSON body), which the
// stream's leader answers, and returns the message's seq, headers and
// data; jetstream.ErrMsgNotFound when no message answers it.
func (l *Log) leaderGetBy(ctx context.Context, q any) (uint64, nats.Header, []byte, error) {
	req, err := json.Marshal(q)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.opts.Stream, req)
	if err != nil {
		return 0, nil, nil, err
	}
	var r struct {
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, nil, nil, fmt.Errorf("message get: bad answer: %w", err)
	}
	if r.Error != nil {
		if r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return 0, nil, nil, jetstream.ErrMsgNotFound
		}
		return 0, nil, nil, fmt.Errorf("message get: %w", r.Error)
	}
	if r.Message == nil {
		return 0, nil, nil, errors.New("message get: no message in the answer")
	}
	var hdr nats.Header
	if len(r.Message.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return 0, nil, nil, fmt.Errorf("message get: %w", err)
		}
	}
	return r.Message.Seq, hdr, r.Message.Data, nil
}

// consumerRead reads up to max messages from seq from with a short-lived
// consumer. It returns hub.ErrTooOld when from is below the first seq.
func (l *Log) consumerRead(ctx context.Context, dst []*hub.Event, from uint64, max int) ([]*hub.Event, error) {
	cons, err := l.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     l.subject,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return dst, err
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.Timeout)
		_ = l.stream.DeleteConsumer(dctx, cons.CachedInfo().Name)
		dcancel()
	}()
	wait := l.opts.Timeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	batch, err := cons.Fetch(max, jetstream.FetchMaxWait(min(wait, time.Second)))
	if err != nil {
		return dst, err
	}
	n := len(dst)
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			return dst, err
		}
		ev, err := l.decode(md.Sequence.Stream, msg.Headers(), msg.Data())
		if err != nil {
			return dst, err
		}
		dst = append(dst, ev)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return dst, err
	}
	if len(dst) == n || dst[n].Seq != from {
		// Nothing at from: deleted, or below the stream's first seq.
		first, _, err := l.Range(ctx)
		if err != nil {
			return dst, err
		}
		if from < first {
			return dst[:n], hub.ErrTooOld
		}
	}
	return dst, nil
}

func max64(a, b uint64) uint64 { return max(a, b) }
