//go:build !race

package rpc_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestIdleStreamStacks: an open SubscribeEvents stream over HTTP/1.1 that
// has received its CaughtUp and a live event keeps a goroutine stack of
// 8 KiB (plus net/http's 2 KiB background reader), not the 16 KiB it grew to
// when its request was validated, its response headers written or (JSON
// codec) a message marshalled on its own stack. Measured over 200 streams from raw client connections (no
// client goroutines), after a GC, which frees the helpers' stacks. Not
// run with the race detector, whose instrumentation enlarges every frame.
func TestIdleStreamStacks(t *testing.T) {
	const n = 200
	const limit = 14 << 10 // per stream: ~11 KB now, ~19 KB when the request was received and the headers written on the stream's own stack
	cases := []struct {
		name, contentType string
		marshal           func(proto.Message) ([]byte, error)
	}{
		{"connect", wireContentType(ringcast.ProtocolConnect), proto.Marshal},
		{"grpcweb", wireContentType(ringcast.ProtocolGRPCWeb), proto.Marshal},
		// protojson's encoder is deep: the JSON codec marshals off the
		// stream's stack too, its control messages as well as events.
		{"connect+json", "application/connect+json", protojson.Marshal},
		{"grpcweb+json", "application/grpc-web+json", protojson.Marshal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			// From the start: a snapshot, then CaughtUp, then live.
			// Filtered, so each stream encodes the trimmed probe itself.
			msg, err := c.marshal(&ringcastv1.SubscribeEventsRequest{Topics: []string{"probe"}})
			if err != nil {
				t.Fatal(err)
			}
			body := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
			body = append(body, msg...)
			req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				ringcastv1connect.EventServiceSubscribeEventsProcedure, srv.Addr, c.contentType, len(body), body)

			before := ringtest.StackInuseAfterGC()
			ringtest.OpenRawStreams(t, srv, req, n)
			per := float64(ringtest.StackInuseAfterGC()-before) / n
			t.Logf("%s: %.0f bytes of goroutine stack per open stream", c.name, per)
			if per > limit {
				t.Fatalf("%.0f bytes of goroutine stack per open stream, want at most %d", per, limit)
			}
		})
	}
}
