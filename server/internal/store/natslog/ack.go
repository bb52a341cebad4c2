package natslog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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

// request sends m to the stream and reads JetStream's answer (readAck).
// what names the request in the error of an answer that is not one.
func (l *Log) request(ctx context.Context, m *nats.Msg, what string) (pubAck, error) {
	resp, err := l.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return pubAck{}, err
	}
	ack, err := l.readAck(resp.Data)
	if err != nil {
		return pubAck{}, fmt.Errorf("%s: bad answer: %w", what, err)
	}
	return ack, nil
}

// Publish retries: a publish nobody answers (no JetStream server has the
// stream's subject, as during a leader election) is sent again this many
// times, this far apart, before it fails as jetstream.ErrNoStreamResponse;
// the NATS client's own synchronous publish does the same.
const (
	publishRetries   = jetstream.DefaultPubRetryAttempts
	publishRetryWait = jetstream.DefaultPubRetryWait
)

// publish stores the one message m and returns its acknowledgement: a
// refusal is an error wrapping its *jetstream.APIError, as the client's
// PublishMsg returns it (condition and StoreError read it so).
func (l *Log) publish(ctx context.Context, m *nats.Msg) (pubAck, error) {
	ack, err := l.request(ctx, m, "publish")
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < publishRetries; r++ {
		pause(ctx, publishRetryWait)
		ack, err = l.request(ctx, m, "publish")
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return pubAck{}, jetstream.ErrNoStreamResponse
	case err != nil:
		return pubAck{}, err
	case ack.Error != nil:
		return pubAck{}, fmt.Errorf("nats: %w", ack.Error)
	case ack.Stream == "":
		return pubAck{}, jetstream.ErrInvalidJSAck
	}
	return ack, nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// readAck decodes JetStream's answer to a publish to the stream. The
// answer of almost every publish, {"stream":S,"seq":N}, is read without
// encoding/json (which took about 7% of the CPU of a publish on the
// embedded store); anything else (a duplicate, a batch, an error) is
// decoded in full.
func (l *Log) readAck(data []byte) (pubAck, error) {
	if ack, ok := l.plainAck(data); ok {
		return ack, nil
	}
	var ack pubAck
	if err := json.Unmarshal(data, &ack); err != nil {
		return pubAck{}, err
	}
	return ack, nil
}

// plainAck reads data when it is exactly {"stream":"<this stream>","seq":N},
// as nats-server writes a new message's acknowledgement; ok is false for
// every other text.
func (l *Log) plainAck(data []byte) (ack pubAck, ok bool) {
	rest, ok := bytes.CutPrefix(data, l.ackPrefix)
	if !ok {
		return pubAck{}, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && rest[0] == '0') {
		return pubAck{}, false
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return pubAck{}, false
	}
	if string(rest[n:]) != "}" {
		return pubAck{}, false
	}
	return pubAck{Stream: l.opts.Stream, Seq: seq}, true
}

// ackPrefix is the start of a plain acknowledgement from stream (plainAck).
func ackPrefix(stream string) []byte {
	name, _ := json.Marshal(stream)
	return append(append([]byte(`{"stream":`), name...), `,"seq":`...)
}
