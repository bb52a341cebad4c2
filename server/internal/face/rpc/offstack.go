package rpc

import (
	"context"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/face/offstack"
)

// receiveOffStack makes a stream's request messages be received — read,
// decoded and validated (protovalidate evaluates CEL rules through deep
// call chains) — by offstack.Run, so the stream's own stack does not grow
// for it. With the first message and the first flush (streamSink), which
// write the response headers, that keeps an HTTP/1.1 stream's parked
// goroutine at 8 KiB of stack instead of 16. The cost is one goroutine
// start per received message, once per stream for SubscribeEvents.
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
	return offstack.Run(func() error { return c.StreamingHandlerConn.Receive(msg) })
}
