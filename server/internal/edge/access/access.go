// Package access is the access log's record of one request (serve
// --access-log): the edge's front handler makes it and writes the line when
// the response ends; the layers inside fill in what only they learn — the
// RPC code (Interceptor) and the token's subject (package auth's
// middleware, SetSubject). Without --access-log no request carries a
// record, and every setter is a context lookup that finds none.
package access

import (
	"context"

	"connectrpc.com/connect"
)

// Record is what the layers inside the front handler tell the access log
// about one request. Its fields are set on the request's goroutine and read
// once the handler has returned (or, for a response whose connection was
// taken over, once that connection closes).
type Record struct {
	code          connect.Code
	hasCode       bool
	subject       string
	authenticated bool
}

// Code is the RPC code the request ended with, and whether it was an RPC
// that reported one (0 with true is OK).
func (r *Record) Code() (connect.Code, bool) { return r.code, r.hasCode }

// Subject is the verified token's sub, and whether the request carried a
// verified token.
func (r *Record) Subject() (string, bool) { return r.subject, r.authenticated }

// ctxKey is the request-context key of a request's Record. It must stay a
// context value: the front handler is HTTP middleware outside connect and
// auth, and connect-go gives an interceptor nothing else from the HTTP
// layer.
type ctxKey struct{}

// WithRecord returns ctx carrying rec.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, ctxKey{}, rec)
}

func from(ctx context.Context) *Record {
	rec, _ := ctx.Value(ctxKey{}).(*Record)
	return rec
}

// SetSubject records the verified token's sub of ctx's request (auth's
// middleware, once the token is verified).
func SetSubject(ctx context.Context, sub string) {
	if rec := from(ctx); rec != nil {
		rec.subject, rec.authenticated = sub, true
	}
}

// SetCode records the RPC code ctx's request is answered with, for a
// refusal answered before connect runs (auth's middleware).
func SetCode(ctx context.Context, code connect.Code) {
	if rec := from(ctx); rec != nil {
		rec.code, rec.hasCode = code, true
	}
}

// end records how an RPC ended: OK, or err's code.
func end(ctx context.Context, err error) {
	if rec := from(ctx); rec != nil {
		rec.code, rec.hasCode = 0, true
		if err != nil {
			rec.code = connect.CodeOf(err)
		}
	}
}

// Interceptor records each RPC's code for the access log. Install it
// outermost, so that it sees the refusals of the interceptors inside it
// (limits, validation); it is needed only with --access-log.
func Interceptor() connect.Interceptor { return interceptor{} }

type interceptor struct{}

func (interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		end(ctx, err)
		return res, err
	}
}

func (interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		err := next(ctx, conn)
		end(ctx, err)
		return err
	}
}

// CodeName is the access log's name of an RPC code: connect's ("ok" for
// 0).
func CodeName(c connect.Code) string {
	if c == 0 {
		return "ok"
	}
	return c.String()
}
