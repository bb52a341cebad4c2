package rpc

import (
	"context"

	"connectrpc.com/connect"
)

// receiveOffStack makes a stream's request messages be received — read,
// decoded and validated (protovalidate evaluates CEL rules through deep
// call chains) — on a short-lived helper goroutine instead of the stream's
// own.
//
// A goroutine's stack only grows while the request is being set up, and it
// is shrunk at GC only when the goroutine uses less than a quarter of it.
// A SubscribeEvents stream parks for its whole life a few KiB deep (net/http,
// the handler chain, connect, the hub's wait), so a stack grown to 16 KiB
// while validating its request stayed 16 KiB for as long as the stream was
// open. Receiving on a helper keeps that peak off the stream's stack; the
// helper's stack is freed when it returns. The cost is one goroutine start
// per received message, once per stream for SubscribeEvents.
//
// It must be installed inside (after) the validation interceptor, so the
// Receive it moves is the validating one.
type receiveOffStack struct{}

func (receiveOffStack) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (receiveOffStack) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (receiveOffStack) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, offStackConn{conn})
	}
}

type offStackConn struct {
	connect.StreamingHandlerConn
}

// Receive runs the wrapped Receive on a helper goroutine and waits for it.
func (c offStackConn) Receive(msg any) error {
	return offStack(func() error { return c.StreamingHandlerConn.Receive(msg) })
}

// offStack runs f on a helper goroutine and waits for it: whatever stack f
// needs is the helper's, freed when it returns, and the caller's stack does
// not grow. The caller is blocked meanwhile, so f may use what the caller
// owns (the channel orders their accesses). A panic in f is raised again
// on the caller's goroutine, where net/http recovers it as before.
func offStack(f func() error) error {
	done := make(chan offStackResult, 1)
	go func() {
		var r offStackResult
		defer func() {
			if r.panicked {
				r.value = recover()
			}
			done <- r
		}()
		r.panicked = true
		r.err = f()
		r.panicked = false
	}()
	r := <-done
	if r.panicked {
		panic(r.value)
	}
	return r.err
}

type offStackResult struct {
	err      error
	panicked bool
	value    any
}
