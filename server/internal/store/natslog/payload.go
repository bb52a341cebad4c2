package natslog

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// HeaderRoom is the room a commit's message takes beside the commit
// itself: its headers (Nats-Msg-Id up to 128 bytes, the stream expected,
// traceparent, the checksum, an atomic batch's id and sequence) and their
// framing, with a wide margin.
const HeaderRoom = 16 << 10

// FitPayload sets an embedded server's max_payload to what the largest
// commit the limits allow needs (hub.MaxCommitBytes plus HeaderRoom), and
// its max_pending to at least that: NATS's own default, 1 MiB, would refuse
// a commit the server accepted.
func FitPayload(o *server.Options, maxRequestBytes, maxFactBytes int) {
	need := int64(hub.MaxCommitBytes(maxRequestBytes, maxFactBytes)) + HeaderRoom
	o.MaxPayload = int32(min(need, 1<<31-1))
	o.MaxPending = max(int64(server.MAX_PENDING_SIZE), int64(o.MaxPayload))
}

// A TooLargeError is the error of appending a commit whose message is
// larger than the NATS server's max_payload: the commit was not stored,
// and no retry will store it. It wraps hub.ErrCommitTooLarge; its message
// names the sizes, never the stream or the server.
type TooLargeError struct {
	// Size is the commit message's size, Limit the server's max_payload,
	// in bytes.
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("commit too large for the store: the store takes messages of at most %d bytes", e.Limit)
	}
	return fmt.Sprintf("commit too large for the store: its message is %d bytes, the store takes at most %d", e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return hub.ErrCommitTooLarge }

// fits returns a TooLargeError when a message of size bytes is larger than
// the connection's max_payload (the NATS client would refuse it with
// nats.ErrMaxPayload) or the stream's max_msg_size (JetStream would refuse
// it; in an atomic batch, without saying which).
func (l *Log) fits(size int) error {
	limit := l.nc.MaxPayload()
	if m := int64(l.info.MaxMsgSize); m > 0 && (limit <= 0 || m < limit) {
		limit = m
	}
	if limit > 0 && int64(size) > limit {
		return &TooLargeError{Size: int64(size), Limit: limit}
	}
	return nil
}

// warnPayload logs, at Warn, a NATS server whose max_payload is below the
// message of the largest commit the limits allow (Options.LargestCommit):
// commits above the largest it allows are refused (TooLargeError).
func (l *Log) warnPayload() {
	want := int64(l.opts.LargestCommit)
	limit := l.nc.MaxPayload()
	if want <= 0 || limit <= 0 || limit >= want+HeaderRoom {
		return
	}
	l.opts.Logger.Warn("the NATS server's max_payload is below the largest commit the request limits allow: larger commits are refused (invalid_argument); raise max_payload on the NATS servers, or lower --max-request-bytes and --max-fact-bytes",
		"max_payload", limit, "largest_commit_allowed", max(limit-HeaderRoom, 0), "largest_commit_limits", want)
}
