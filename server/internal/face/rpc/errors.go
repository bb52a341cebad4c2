package rpc

import (
	"context"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// codes is the RPC face's one error→code table: the hub's errors a call
// may end with, matched in order (errors.Is), and the code each is answered
// with. Besides it: a refusal by auth carries its code (auth.Error.Code); a
// stream whose client went away ends canceled; a publish error the table
// does not name is internal, without its text; a stream's other errors (a
// write that failed) are connect's to answer.
var codes = [...]struct {
	err  error
	code connect.Code
}{
	{hub.ErrInvalidFact, connect.CodeInvalidArgument},
	{hub.ErrTooManyKeys, connect.CodeInvalidArgument},
	{hub.ErrNoKey, connect.CodeInvalidArgument},
	{hub.ErrCommitTooLarge, connect.CodeInvalidArgument}, // permanent: the store's max_payload, named in bytes
	{hub.ErrDedupeFull, connect.CodeResourceExhausted},   // with Retry-After (limit.Exhausted)
	{hub.ErrDraining, connect.CodeUnavailable},
	{hub.ErrUnavailable, connect.CodeUnavailable},
	{hub.ErrBatchUnsupported, connect.CodeUnimplemented},
	{hub.ErrOutcomeUnsupported, connect.CodeUnimplemented},
	{hub.ErrExpired, connect.CodeUnauthenticated}, // says auth.MsgExpired, as a token refused at expiry does
}

// codeOf is err's code in codes.
func codeOf(err error) (connect.Code, bool) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	return 0, false
}

// authError answers a refusal by auth (ScopeSubscribe, CheckPublish).
func authError(err error) error {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return connect.NewError(ae.Code(), err)
	}
	return connect.NewError(connect.CodePermissionDenied, err)
}

// publishError answers a hub publish (or outcome) error, with a message that names no
// package of the server's.
func publishError(err error) error {
	code, ok := codeOf(err)
	if !ok {
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	msg := errors.New(strings.TrimPrefix(err.Error(), "hub: "))
	if code == connect.CodeResourceExhausted {
		after := time.Second
		var full *hub.DedupeFullError
		if errors.As(err, &full) {
			after = full.RetryAfter
		}
		return limit.Exhausted(msg, after)
	}
	return connect.NewError(code, msg)
}

// subscribeError answers the error a stream ended with (nil: it ended OK).
func subscribeError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	code, ok := codeOf(err)
	switch {
	case !ok:
		return err
	case code == connect.CodeUnauthenticated:
		return connect.NewError(code, errors.New(auth.MsgExpired))
	}
	return connect.NewError(code, err)
}
