package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrStoreUnavailable and ErrStoreFull are wrapped by the errors of a Log
// whose store does not answer or has no room: what a client is told names
// the condition, not the NATS client library.
var (
	ErrStoreUnavailable = errors.New("store unavailable")
	ErrStoreFull        = errors.New("store full")
)

// JetStream API error codes that name a store condition.
const (
	errClusterNotAvailable = 10008 // no JetStream quorum (meta leader)
	errInsufficient        = 10023 // insufficient resources
	errStorageExceeded     = 10047 // insufficient storage resources available
	errMemoryExceeded      = 10028 // insufficient memory resources available
	errStoreFailed         = 10077 // the stream's store failed (disk)
	errNotEnabled          = 10076 // JetStream not enabled
	errNotEnabledAccount   = 10039 // JetStream not enabled for the account
)

// conditionError is a store failure told by its condition. Its message is
// what a client sees; Unwrap keeps the library's error for errors.Is.
type conditionError struct {
	kind   error  // ErrStoreUnavailable or ErrStoreFull
	detail string // the condition, in words
	err    error
}

func (e *conditionError) Error() string   { return e.kind.Error() + ": " + e.detail }
func (e *conditionError) Unwrap() []error { return []error{e.kind, e.err} }

// condition maps a failure of a request to JetStream to its condition:
// ErrStoreFull or ErrStoreUnavailable with a few words, or err as it is
// when it is none of those (a damaged or replaced log, a bad request). It
// records the condition for Condition.
func (l *Log) condition(err error) error {
	if err == nil {
		return nil
	}
	var ce *conditionError
	if errors.As(err, &ce) {
		l.cond.set(ce)
		return err
	}
	c := classify(err, l.opts.Timeout)
	if c == nil {
		return err
	}
	l.cond.set(c)
	return c
}

func classify(err error, timeout time.Duration) *conditionError {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errInsufficient, errStorageExceeded, errMemoryExceeded:
			return &conditionError{ErrStoreFull, "JetStream has no room for more commits (" + apiErr.Description + ")", err}
		case errClusterNotAvailable:
			return &conditionError{ErrStoreUnavailable, "no JetStream quorum", err}
		case errStoreFailed:
			if strings.Contains(apiErr.Description, "maximum") {
				return &conditionError{ErrStoreFull, "the stream is at its limit (" + apiErr.Description + ")", err}
			}
			return &conditionError{ErrStoreUnavailable, "JetStream could not store the commit (" + apiErr.Description + ")", err}
		case errNotEnabled, errNotEnabledAccount:
			return &conditionError{ErrStoreUnavailable, "JetStream is not enabled", err}
		}
		if apiErr.Code == 503 {
			return &conditionError{ErrStoreUnavailable, "JetStream is unavailable (" + apiErr.Description + ")", err}
		}
		return nil
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return &conditionError{ErrStoreUnavailable, "no JetStream server answered (no quorum, or no leader for the stream)", err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &conditionError{ErrStoreUnavailable, fmt.Sprintf("JetStream did not answer within %v", timeout), err}
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrConnectionDraining):
		return &conditionError{ErrStoreUnavailable, "not connected to NATS", err}
	}
	return nil
}

// fullFor is how long a store found full is reported full without a
// commit stored meanwhile: then Condition says available again, so that a
// store that freed room is tried.
const fullFor = 10 * time.Second

// condState is the last condition a Log met.
type condState struct {
	mu   sync.Mutex
	last *conditionError
	at   time.Time
}

func (c *condState) set(e *conditionError) {
	c.mu.Lock()
	c.last, c.at = e, time.Now()
	c.mu.Unlock()
}

// ok records that a request succeeded: the store is available and had room
// for what was asked (a read does not clear full).
func (c *condState) ok(stored bool) {
	c.mu.Lock()
	if c.last != nil && (stored || !errors.Is(c.last.kind, ErrStoreFull)) {
		c.last = nil
	}
	c.mu.Unlock()
}

// Condition reports whether the store is available and has room now, as
// the Log's requests found it: nil, or an error wrapping ErrStoreFull (a
// commit was refused for want of room in the last fullFor and none stored
// since) or ErrStoreUnavailable (the last request failed so: no quorum, no
// answer, no connection). A hub asks the Log's range about every second,
// so an unavailable store is noticed within about a second, and its return
// too. The message names the condition.
func (l *Log) Condition() error {
	l.cond.mu.Lock()
	defer l.cond.mu.Unlock()
	c := l.cond.last
	if c == nil || (errors.Is(c.kind, ErrStoreFull) && time.Since(l.cond.at) > fullFor) {
		return nil
	}
	return c
}
