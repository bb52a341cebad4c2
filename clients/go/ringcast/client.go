// Package ringcast is the Go client for ringcast: a thin, documented wrapper
// over the generated Connect client (gen/go/ringcast/v1/ringcastv1connect)
// that owns the resume/resync loop, so an application ranges over facts and
// never loses or repeats one across disconnects, restarts, leases and lag.
//
//	cur, err := ringcast.LoadCursor("orders.cursor") // missing file: start from a snapshot
//	if err != nil { return err }
//	c := ringcast.NewClient("http://127.0.0.1:8080")
//	sub := c.Subscribe(ringcast.WithCursor(cur), ringcast.WithTopics("gauges"))
//	for it, err := range sub.Items(ctx) {
//		if err != nil { return err } // permanent failure or ctx done; transient ones are retried
//		handle(it)                   // a fact, KindCaughtUp or KindResynced
//		if err := ringcast.SaveCursor("orders.cursor", it.Cursor); err != nil { return err }
//	}
//
// # Why range-over-func
//
// Subscription.Items returns an iter.Seq2[Item, error] rather than a
// Next/Item/Err trio because the loop's shape is the consumption rule: the
// item handed to the loop body is consumed, and leaving the loop (break,
// return, panic) always runs the iterator's cleanup — the stream is closed
// and no goroutine is left — with nothing like a Close for the caller to
// forget. The iterator pulls messages from the stream on the caller's own
// goroutine, so a slow loop body is ordinary backpressure and a body that
// stops reading for longer than the window is told so by a KindResynced
// item.
//
// # The cursor
//
// A Cursor is (epoch, seq, fact): commit seq of server instance epoch is
// consumed up to fact (0 = whole commit). It moves when a fact is handed to
// the loop body, and when the server reports Progress over commits the
// topic filter skipped; heartbeats and CaughtUp never move it. Breaking out
// mid-commit leaves it on the next fact of that commit. It serialises to a
// short versioned string (see Cursor) and persists atomically with
// SaveCursor.
//
// # Reconnects and resyncs
//
// Every stream end — OK (leases, drain), network error, or a transient code
// (see Retryable) — is followed by a reconnect from the cursor after a
// Backoff delay, never zero. A permanent code (unauthenticated,
// permission_denied, invalid_argument, …) ends the iteration with that
// error. When the server can no longer serve the cursor it says so
// (ResyncRequired or Gap): the cursor is discarded, a KindResynced item
// tells why, and the snapshot that follows starts from scratch.
package ringcast

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// Protocol is the wire protocol a Client speaks.
type Protocol string

// The protocols one ringcast handler serves.
const (
	ProtocolConnect Protocol = "connect"
	ProtocolGRPC    Protocol = "grpc"
	ProtocolGRPCWeb Protocol = "grpcweb"
)

// ParseProtocol accepts "connect", "grpc" or "grpcweb" (also "grpc-web").
func ParseProtocol(s string) (Protocol, error) {
	switch p := Protocol(strings.ToLower(s)); p {
	case ProtocolConnect, ProtocolGRPC, ProtocolGRPCWeb:
		return p, nil
	case "grpc-web":
		return ProtocolGRPCWeb, nil
	}
	return "", fmt.Errorf("unknown protocol %q (want connect, grpc or grpcweb)", s)
}

// Client talks to one ringcast server.
type Client struct {
	rpc  ringcastv1connect.EventServiceClient
	opts options
}

type options struct {
	protocol   Protocol
	httpClient connect.HTTPClient
	header     http.Header
	token      TokenSource
	backoff    Backoff
	logger     *slog.Logger
}

// Option configures a Client.
type Option func(*options)

// WithProtocol selects the wire protocol (default ProtocolConnect).
func WithProtocol(p Protocol) Option { return func(o *options) { o.protocol = p } }

// WithHTTPClient replaces the default HTTP client (HTTP/1.1 and HTTP/2 over
// TLS, h2c for gRPC on http:// URLs).
func WithHTTPClient(c connect.HTTPClient) Option { return func(o *options) { o.httpClient = c } }

// TokenSource returns the bearer token for a request (docs/security.md).
type TokenSource func(ctx context.Context) (string, error)

// WithToken sends "Authorization: Bearer <token>" on every request.
func WithToken(token string) Option {
	return WithTokenSource(func(context.Context) (string, error) { return token, nil })
}

// WithTokenSource calls src for the bearer token before every request and
// every (re)connect of a subscription, so a token refreshed by src is used
// from the next call on. A stream the server ends at its token's expiry
// (unauthenticated "token expired") is resumed at once with a fresh token
// from src, from the cursor, losing and repeating nothing. That happens
// once per expiry: a stream that ends with "token expired" again before it
// was healthy (lived Backoff.Reset) is resumed after the backoff delay, so
// tokens that do not last never make a loop. If a fresh token is refused
// at once, or any other unauthenticated or permission_denied error ends a
// stream, the subscription ends with that error. An error from src fails
// the call with code unauthenticated, wrapping it.
func WithTokenSource(src TokenSource) Option { return func(o *options) { o.token = src } }

// WithHeader adds a header to every request (auth headers pass through).
func WithHeader(key, value string) Option {
	return func(o *options) {
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Add(key, value)
	}
}

// WithLogger logs reconnects (at debug level) to l. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// NewClient returns a client for the server at baseURL (e.g.
// "http://127.0.0.1:8080").
func NewClient(baseURL string, opts ...Option) *Client {
	o := options{protocol: ProtocolConnect, backoff: DefaultBackoff}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.httpClient == nil {
		o.httpClient = NewHTTPClient(o.protocol)
	}
	var copts []connect.ClientOption
	switch o.protocol {
	case ProtocolGRPC:
		copts = append(copts, connect.WithGRPC())
	case ProtocolGRPCWeb:
		copts = append(copts, connect.WithGRPCWeb())
	}
	if len(o.header) > 0 {
		copts = append(copts, connect.WithInterceptors(headerInterceptor(o.header)))
	}
	if o.token != nil {
		copts = append(copts, connect.WithInterceptors(tokenInterceptor(o.token)))
	}
	return &Client{rpc: ringcastv1connect.NewEventServiceClient(o.httpClient, strings.TrimRight(baseURL, "/"), copts...), opts: o}
}

// NewHTTPClient returns an HTTP client suited to protocol p: gRPC needs
// HTTP/2, so it speaks h2c (prior knowledge) on http:// URLs; Connect and
// gRPC-Web use HTTP/1.1 there. All use HTTP/2 over TLS on https:// URLs.
func NewHTTPClient(p Protocol) *http.Client {
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	if p == ProtocolGRPC {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Protocols = &protocols
	return &http.Client{Transport: t}
}

// RPC is the generated client underneath, for calls the wrapper does not
// cover.
func (c *Client) RPC() ringcastv1connect.EventServiceClient { return c.rpc }

// CloseIdleConnections closes the idle connections of the client's HTTP
// client, when it has that method (the default one does).
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.opts.httpClient.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Publish appends one commit and returns its receipt. A non-empty
// idempotencyKey makes a retry safe: a repeat within the server's dedupe
// window returns the original receipt with Duplicate set.
func (c *Client) Publish(ctx context.Context, facts []*ringcastv1.Fact, idempotencyKey string) (*ringcastv1.PublishResponse, error) {
	res, err := c.rpc.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: idempotencyKey}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// PublishBatch appends several commits in one request, in order, and
// returns one receipt per commit, in the same order. Each commit is a
// PublishRequest (its facts and an optional idempotency key, deduplicated
// on its own). The server checks every commit first and appends all of
// them or, on any error, none; no other commit lands between them.
func (c *Client) PublishBatch(ctx context.Context, commits []*ringcastv1.PublishRequest) ([]*ringcastv1.PublishResponse, error) {
	res, err := c.rpc.PublishBatch(ctx, connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: commits}))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetReceipts(), nil
}

// Status returns the server's status and subscriber count.
func (c *Client) Status(ctx context.Context) (*ringcastv1.GetServerStatusResponse, error) {
	res, err := c.rpc.GetServerStatus(ctx, connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// headerInterceptor adds fixed headers to every request.
type headerInterceptor http.Header

func (h headerInterceptor) set(dst http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

func (h headerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h.set(req.Header())
		return next(ctx, req)
	}
}

func (h headerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		h.set(conn.RequestHeader())
		return conn
	}
}

func (h headerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// tokenInterceptor sets the Authorization header from a TokenSource on
// every call.
type tokenInterceptor TokenSource

func (t tokenInterceptor) authorization(ctx context.Context) (string, error) {
	tok, err := t(ctx)
	if err != nil {
		return "", connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("ringcast: token source: %w", err))
	}
	return "Bearer " + tok, nil
}

func (t tokenInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		a, err := t.authorization(ctx)
		if err != nil {
			return nil, err
		}
		req.Header().Set("Authorization", a)
		return next(ctx, req)
	}
}

func (t tokenInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		a, err := t.authorization(ctx)
		if err != nil {
			return failedConn{conn, err}
		}
		conn.RequestHeader().Set("Authorization", a)
		return conn
	}
}

func (t tokenInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// failedConn is a stream that could not get its token: sending fails, so
// the call never goes out.
type failedConn struct {
	connect.StreamingClientConn
	err error
}

func (f failedConn) Send(any) error    { return f.err }
func (f failedConn) Receive(any) error { return f.err }
