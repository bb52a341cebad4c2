package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// Store conditions: every error of Available, and every error StoreError
// describes, wraps one of them.
var (
	// ErrStoreUnavailable: JetStream does not answer for the stream (no
	// connection, no leader or quorum, JetStream off).
	ErrStoreUnavailable = errors.New("store unavailable")
	// ErrStoreFull: the stream or JetStream's storage takes no more
	// commits (a limit with discard new, storage exhausted).
	ErrStoreFull = hub.ErrStoreFull
	// ErrStorageExhausted: JetStream refused a commit for want of storage
	// (its storage limit or the disk), not by the stream's own limits; a
	// StoreError wrapping it wraps ErrStoreFull too. Only a fall in the
	// storage used shows that it has passed.
	ErrStorageExhausted = errors.New("JetStream storage exhausted")
)

// Available reports whether the stream takes commits now: nil when it
// does; else an error wrapping ErrStoreUnavailable (JetStream does not
// answer for the stream, or the stream has no leader) or ErrStoreFull (the
// stream discards new commits and is at its message limit or within one
// average commit of its byte limit, or the account's storage limit is
// reached), or a BookkeepingError (wrapping ErrStoreUnavailable: the
// stream's record is gone or unreadable, and commits are refused until it
// reads back). It asks JetStream (up to three requests); a full store that
// discards old commits is never full.
func (l *Log) Available(ctx context.Context) error {
	info, err := l.Info(ctx)
	if err != nil {
		return unavailable(err)
	}
	if c := info.Cluster; c != nil && c.Leader == "" {
		return fmt.Errorf("%w: JetStream stream %q has no leader (no quorum of its replicas)", ErrStoreUnavailable, info.Config.Name)
	}
	c, s := info.Config, info.State
	if c.Discard == jetstream.DiscardNew {
		if c.MaxMsgs > 0 && s.Msgs >= uint64(c.MaxMsgs) {
			return fmt.Errorf("%w: JetStream stream %q holds %d commits, its limit, and discards new ones", ErrStoreFull, c.Name, s.Msgs)
		}
		if c.MaxBytes > 0 {
			next := uint64(1)
			if s.Msgs > 0 {
				next = s.Bytes / s.Msgs
			}
			if s.Bytes+next > uint64(c.MaxBytes) {
				return fmt.Errorf("%w: JetStream stream %q holds %d of its %d bytes and discards new commits", ErrStoreFull, c.Name, s.Bytes, c.MaxBytes)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	ai, err := l.js.AccountInfo(ctx)
	if err != nil {
		return unavailable(err)
	}
	if max := ai.Limits.MaxStore; max > 0 && ai.Store >= uint64(max) {
		return fmt.Errorf("%w: the JetStream account stores %d of its %d bytes", ErrStoreFull, ai.Store, max)
	}
	// A store whose bookkeeping is lost takes no commits (bookkeeping.go).
	return l.checkRecord(ctx)
}

// StoreUsed is the storage the JetStream account uses now, in bytes: a
// store refused as full takes commits again once it falls.
func (l *Log) StoreUsed(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	ai, err := l.js.AccountInfo(ctx)
	if err != nil {
		return 0, unavailable(err)
	}
	return ai.Store, nil
}

// unavailable is StoreError(err) for a request that only asks about the
// store: whatever its error, the store is unavailable.
func unavailable(err error) error {
	err = StoreError(err)
	if errors.Is(err, ErrStoreUnavailable) || errors.Is(err, ErrStoreFull) {
		return err
	}
	return &storeError{cond: ErrStoreUnavailable, why: strings.TrimPrefix(strings.TrimPrefix(err.Error(), "nats: "), "nats: "), err: err}
}

// StoreError describes a failed request to JetStream by the store's
// condition, for clients and probes: an error wrapping ErrStoreFull or
// ErrStoreUnavailable (and err, for errors.Is), whose message names the
// condition rather than the client library. Other errors (nil, a context's
// end, the log replaced, a bad commit) are returned as they are.
func StoreError(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, ErrStoreFull), errors.Is(err, ErrStoreUnavailable):
		return err
	case errors.As(err, &apiErr):
		e := &storeError{cond: apiCondition(apiErr), err: err}
		if apiErr.ErrorCode == 10023 || apiErr.ErrorCode == 10047 { // insufficient (storage) resources
			e.storage = true
		}
		return e
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrReconnectBufExceeded):
		return &storeError{cond: ErrStoreUnavailable, why: "no connection to NATS", err: err}
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return &storeError{cond: ErrStoreUnavailable, why: "JetStream does not answer for the stream", err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &storeError{cond: ErrStoreUnavailable, why: "JetStream did not answer in time", err: err}
	}
	return err
}

// apiCondition is the condition of a JetStream API error, by its code.
func apiCondition(e *jetstream.APIError) error {
	switch {
	case e.ErrorCode == 10023, e.ErrorCode == 10047, e.ErrorCode == 10028: // insufficient (storage, memory) resources
		return ErrStoreFull
	case strings.Contains(e.Description, "maximum bytes exceeded"), strings.Contains(e.Description, "maximum messages exceeded"):
		return ErrStoreFull
	case e.Code == 503, e.Code == 500:
		return ErrStoreUnavailable
	}
	return nil
}

// storeError is a JetStream error described by the store's condition.
type storeError struct {
	cond    error  // ErrStoreFull or ErrStoreUnavailable; nil: neither
	storage bool   // ErrStorageExhausted too
	why     string // the condition in words; "": the API error's description
	err     error
}

func (e *storeError) Error() string {
	why := e.why
	var apiErr *jetstream.APIError
	if why == "" && errors.As(e.err, &apiErr) {
		why = fmt.Sprintf("JetStream: %s (error %d)", apiErr.Description, apiErr.ErrorCode)
	}
	if e.cond == nil {
		return why
	}
	return e.cond.Error() + ": " + why
}

func (e *storeError) Unwrap() []error {
	errs := []error{e.err}
	if e.cond != nil {
		errs = append(errs, e.cond)
	}
	if e.storage {
		errs = append(errs, ErrStorageExhausted)
	}
	return errs
}
