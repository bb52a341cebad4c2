package natslog

import (
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// condition describes a failure of a request to JetStream by the store's
// condition (StoreError): an error wrapping ErrStoreFull or
// ErrStoreUnavailable whose message names the condition, not the NATS
// client. A message larger than the server or the stream takes is a
// TooLargeError. Other errors (a damaged or replaced log, a bad request)
// are returned as they are. Whether the store takes commits now is asked
// with Available; the server's readiness owns what follows from a refusal.
func (l *Log) condition(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return &TooLargeError{Limit: l.nc.MaxPayload()}
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrMessageTooLarge:
		return &TooLargeError{Limit: int64(l.info.MaxMsgSize)}
	}
	return StoreError(err)
}

// jsErrMessageTooLarge is JetStream's error code for a message larger than
// the stream's max_msg_size.
const jsErrMessageTooLarge = 10054
