package edge

import (
	"context"
	"errors"
	"log/slog"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/edge/auth"
)

// Refused requests are logged with their reason at Debug, never higher (a
// client, or an attacker, sending nothing but refused requests must not
// flood the log at the default level), each kind in one place:
//
//	refusal=host     the Host check (hostCheck, origins.go)
//	refusal=limit    a per-client or connection limit (package limit, refuse)
//	refusal=auth     a token or a grant (package auth, Middleware)
//	refusal=request  an RPC the handler refused: validation, a request it
//	                 cannot serve, a full dedupe table, a draining server
//	                 (LogRefusals); GET /events' bad query (package sse)

// LogRefusals returns the interceptor that logs, at Debug on log, every RPC
// the handler refuses (refusal=request). Install it inside the limits'
// interceptor and outside the validation (edge.OneRequestMessage and the
// handler's own), so each refusal is logged once: the limits and auth log
// theirs.
func LogRefusals(log *slog.Logger) connect.Interceptor { return refusals{log} }

type refusals struct{ log *slog.Logger }

// refusedCodes are the codes logged: the request, or the server's state,
// refused it. Auth's and the limits' refusals are logged by them.
var refusedCodes = map[connect.Code]bool{
	connect.CodeInvalidArgument:    true,
	connect.CodeFailedPrecondition: true,
	connect.CodeOutOfRange:         true,
	connect.CodeUnimplemented:      true,
	connect.CodeNotFound:           true,
	connect.CodeAlreadyExists:      true,
	connect.CodeResourceExhausted:  true,
	connect.CodeUnavailable:        true,
}

func (l refusals) refused(ctx context.Context, procedure, remote string, err error) {
	if err == nil || !l.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	code := connect.CodeOf(err)
	if !refusedCodes[code] {
		return
	}
	attrs := []slog.Attr{slog.String("refusal", "request"),
		slog.String("procedure", procedure), slog.String("code", code.String()),
		slog.String("client", auth.ClientID(ctx, remote)), slog.String("error", err.Error())}
	// A store's condition is told to the client by its class only; its
	// own words are for the log.
	var d interface{ Detail() string }
	if errors.As(err, &d) {
		attrs = append(attrs, slog.String("detail", d.Detail()))
	}
	l.log.LogAttrs(ctx, slog.LevelDebug, "request refused", attrs...)
}

func (l refusals) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		if err != nil {
			l.refused(ctx, req.Spec().Procedure, req.Peer().Addr, err)
		}
		return res, err
	}
}

func (l refusals) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (l refusals) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		err := next(ctx, conn)
		if err != nil {
			l.refused(ctx, conn.Spec().Procedure, conn.Peer().Addr, err)
		}
		return err
	}
}
