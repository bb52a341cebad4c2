package rpc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/retry"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

// codes is the RPC face's one error→code table: the hub's errors a call
// may end with, matched in order (errors.Is), the code each is answered
// with, and what the client is told. An error of the request itself (a
// fact, a key, a batch too large, a full share of the dedupe table) is
// told in the hub's own words, which name only the request's fields and
// the server's settings. A condition of the store is told only by its
// class (say): the store's own words name streams, seqs, keys and client
// libraries, which are the server's business, not the caller's (they go
// to the server's log with the refusal, see worded). Besides the table:
// a refusal by the edge carries its code (edgeRefusal); a stream whose
// client went away ends canceled; an error the table does not name is
// internal, without its text; a stream's other errors (a write that
// failed) are connect's to answer.
var codes = [...]struct {
	err  error
	code connect.Code
	say  string // "": the error's own text
}{
	{hub.ErrInvalidFact, connect.CodeInvalidArgument, ""},
	{hub.ErrInvalidRequest, connect.CodeInvalidArgument, ""},
	{hub.ErrTooManyKeys, connect.CodeInvalidArgument, ""},
	{hub.ErrNoKey, connect.CodeInvalidArgument, ""},
	{hub.ErrCommitTooLarge, connect.CodeInvalidArgument, ""}, // permanent: the store's max_payload, named in bytes
	{hub.ErrKeyReused, connect.CodeAlreadyExists, ""},
	{hub.ErrDedupeFull, connect.CodeResourceExhausted, ""}, // with Retry-After (retry.Exhausted)
	{hub.ErrDraining, connect.CodeUnavailable, ""},
	{hub.ErrBatchUnsupported, connect.CodeUnimplemented, "this store cannot append several commits atomically; publish them one by one"},
	{hub.ErrOutcomeUnsupported, connect.CodeUnimplemented, "this store cannot read a publish's outcome"},
	{hub.ErrLogReplaced, connect.CodeUnavailable, "store unavailable: its log was replaced, and this server no longer serves it (retry: another replica, or this one restarted, answers)"},
	{hub.ErrLogDamaged, connect.CodeUnavailable, "store unavailable: its log is damaged, and this server no longer serves it (retry: another replica, or this one recovered, answers)"},
	{hub.ErrStoreFull, connect.CodeUnavailable, "store full: it takes no more commits now; retry later"},
	{hub.ErrUnavailable, connect.CodeUnavailable, "store unavailable: retry"},
	{hub.ErrExpired, connect.CodeUnauthenticated, names.TokenExpired}, // as a token refused at expiry says
}

// codeOf is err's row in codes.
func codeOf(err error) (code connect.Code, say string, ok bool) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, c.say, true
		}
	}
	return 0, "", false
}

// worded is a client's message for an error, keeping the error itself
// for the server's log (edge.LogRefusals logs its Detail).
type worded struct {
	say   string
	cause error
}

func (w *worded) Error() string  { return w.say }
func (w *worded) Unwrap() error  { return w.cause }
func (w *worded) Detail() string { return w.cause.Error() }

// answer is err as the client is told it: its row's code, and its row's
// words or the hub's own.
func answer(err error) (connect.Code, error, bool) {
	code, say, ok := codeOf(err)
	if !ok {
		return 0, nil, false
	}
	if say == "" {
		return code, errors.New(strings.TrimPrefix(err.Error(), "hub: ")), true
	}
	return code, &worded{say: say, cause: err}, true
}

// edgeRefusal is a refusal the edge decided through the hub's admission
// (a stream's, a publish's), which carries its code on every wire and its
// HTTP answer: the face passes it on as it is.
type edgeRefusal interface {
	error
	Code() connect.Code
	Refuse(http.ResponseWriter)
}

// refused answers err when it is the edge's refusal.
func refused(err error) (*connect.Error, bool) {
	var refusal edgeRefusal
	if errors.As(err, &refusal) {
		return connect.NewError(refusal.Code(), err), true
	}
	return nil, false
}

// publishError answers a hub publish (or outcome, or request) error.
func publishError(err error) error {
	if ce, ok := refused(err); ok {
		return ce
	}
	code, msg, ok := answer(err)
	if !ok {
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	if code == connect.CodeResourceExhausted {
		after := time.Second
		var full *hub.DedupeFullError
		if errors.As(err, &full) {
			after = full.RetryAfter
		}
		return retry.Exhausted(msg, after)
	}
	return connect.NewError(code, msg)
}

// subscribeError answers the error a stream ended with (nil: it ended OK),
// or the refusal its admission gave (a coded error: the edge's).
func subscribeError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	if ce, ok := refused(err); ok {
		return ce
	}
	code, msg, ok := answer(err)
	if !ok {
		return err
	}
	return connect.NewError(code, msg)
}
