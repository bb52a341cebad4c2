package limit

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/edge/retry"
)

// connectError is a refusal as connect sends it (refuse.go).
func connectError(err error) error { return retry.Exhausted(err, retryAfter(err)) }

// Interceptor applies the limits to a Connect handler (Connect, gRPC,
// gRPC-Web): every stream (SubscribeEvents, gRPC health Watch, reflection)
// takes one of its client's stream slots while it lasts; Publish takes one
// token of its client's bucket of commits and PublishBatch one per commit,
// and each takes its request's protobuf size from the client's bucket of
// bytes; GetPublishOutcome takes as much as a Publish. Install it outside
// validation, so refused requests cost nothing more.
func (l *Limiter) Interceptor() connect.Interceptor { return interceptor{l} }

type interceptor struct{ l *Limiter }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		n := 0
		switch req.Spec().Procedure {
		case ringcastv1connect.EventServicePublishProcedure:
			n = 1
		case ringcastv1connect.EventServicePublishBatchProcedure:
			b, _ := req.Any().(*ringcastv1.PublishBatchRequest)
			n = max(1, len(b.GetCommits()))
		case ringcastv1connect.EventServiceGetPublishOutcomeProcedure:
			// A read made instead of a retried publish costs what the
			// retry would: on a durable store it asks JetStream's leader.
			n = 1
		}
		if n > 0 {
			size := 0
			if m, ok := req.Any().(proto.Message); ok && i.l.CountsPublishBytes() {
				size = proto.Size(m)
			}
			var buf [64]byte // the client's id, on the stack unless longer
			if err := i.l.AllowPublishBytes(auth.AppendClientID(buf[:0], ctx, req.Peer().Addr), n, size); err != nil {
				return nil, connectError(err)
			}
		}
		return next(ctx, req)
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		release, err := i.l.OpenStream(auth.ClientID(ctx, conn.Peer().Addr))
		if err != nil {
			return connectError(err)
		}
		defer release()
		return next(ctx, conn)
	}
}

// OpenSSE takes a stream slot for r's client, for a GET /events stream
// (sse.WithStreamSlots): over the limit, it answers with 429, Retry-After
// and a one-line reason (EventSource then stops, as it does on any non-200;
// a page should retry later) and returns ok false. Otherwise the stream
// holds the slot until it calls release.
func (l *Limiter) OpenSSE(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, err := l.OpenStream(auth.ClientID(r.Context(), r.RemoteAddr))
	if err != nil {
		retry.WriteExhausted(w, err.Error(), retryAfter(err))
		return nil, false
	}
	return release, true
}

// Listener bounds the connections a server holds: past max in all, or past
// perClient from one client (its remote IP; an IPv6 client is its /64, as
// for the reset guard), a new connection is turned away at once (and
// counted and logged as the "conns" or "conns_per_client" limit) instead
// of waiting in the backlog, so the connections already held keep being
// served and no one client can take every slot. It is told why: an
// HTTP/1.1 429 response with Retry-After names the bound and how to raise
// it (turnAway). max or perClient < 0: that bound is off.
func (l *Limiter) Listener(ln net.Listener, max, perClient int) net.Listener {
	if max < 0 && perClient < 0 {
		return ln
	}
	return &listener{Listener: ln, l: l, max: int64(max), perClient: perClient, byClient: make(map[string]int),
		turning: make(chan struct{}, maxTurning)}
}

// SideListener is Listener for a side listener (--metrics-addr,
// --pprof-addr), whose bounds are fixed: its refusals say so rather than
// name the main port's flags.
func (l *Limiter) SideListener(ln net.Listener, max, perClient int) net.Listener {
	sl := l.Listener(ln, max, perClient)
	if ll, ok := sl.(*listener); ok {
		ll.side = true
	}
	return sl
}

type listener struct {
	net.Listener
	l         *Limiter
	max       int64 // < 0: no bound
	perClient int   // < 0: no bound
	active    atomic.Int64
	mu        sync.Mutex
	byClient  map[string]int // open connections per client (perClient >= 0)
	turning   chan struct{}  // a slot per connection being turned away
	side      bool           // a side listener's (SideListener)
}

// maxTurning bounds the refused connections told why at once; past it, a
// refused connection is closed without a word (a flood of connections
// must not cost a goroutine each).
const maxTurning = 64

// turnAwayWait bounds how long a refused connection may take to be told
// why and to close.
const turnAwayWait = time.Second

// turnAway answers a refused connection with an HTTP/1.1 429 naming the
// bound (reason) and closes it, on a goroutine of its own: it writes the
// response, closes its side and reads what the client sent until the
// client closes too (closing with unread bytes would reset the connection
// and could lose the response), within turnAwayWait. A client speaking
// HTTP/2 or TLS sees its connection fail, as before; the log and
// ringcast_limit_rejections_total say why.
func (ln *listener) turnAway(c net.Conn, reason string) {
	select {
	case ln.turning <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-ln.turning }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(turnAwayWait))
		body := "resource_exhausted: " + reason + "\n"
		_, _ = io.WriteString(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"+
			"Connection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := ln.active.Add(1); ln.max >= 0 && n > ln.max {
			ln.active.Add(-1)
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			ln.turnAway(c, ln.l.refuseConn("ip:"+host, Conns, int(ln.max), ln.side)) // counted before the client can see the refusal
			continue
		}
		id := ""
		if ln.perClient >= 0 {
			id = clientOf(c)
			ln.mu.Lock()
			over := ln.byClient[id] >= ln.perClient
			if !over {
				ln.byClient[id]++
			}
			ln.mu.Unlock()
			if over {
				ln.active.Add(-1)
				ln.turnAway(c, ln.l.refuseConn(id, ConnsPerClient, ln.perClient, ln.side))
				continue
			}
		}
		return &conn{Conn: c, ln: ln, id: id}, nil
	}
}

type conn struct {
	net.Conn
	ln     *listener
	id     string      // its client, when counted per client
	closed atomic.Bool // not a sync.Once: every connection holds one of these, 16 bytes smaller
}

func (c *conn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.ln.active.Add(-1)
		if c.ln.perClient >= 0 {
			c.ln.mu.Lock()
			if c.ln.byClient[c.id]--; c.ln.byClient[c.id] <= 0 {
				delete(c.ln.byClient, c.id)
			}
			c.ln.mu.Unlock()
		}
	}
	return c.Conn.Close()
}

// retryAfter is the wait err names, if it is an *Error, else a second.
func retryAfter(err error) time.Duration {
	if e, ok := AsError(err); ok {
		return e.RetryAfter
	}
	return time.Second
}
