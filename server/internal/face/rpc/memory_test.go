//go:build linux

package rpc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// Heap bounds documented in docs/limits.md ("Heap, and slow readers").
const (
	// heapBudgetMultiple: the heap the server holds stays within this
	// multiple of --max-ring-bytes + --max-state-bytes ...
	heapBudgetMultiple = 1.5
	// ... plus, per open stream, this much and twice its largest commit
	// (its batch and its pending write, hub.MaxBatchBytes each, its
	// connection, and one commit over each).
	heapPerStream = 576 << 10 // 2 × hub.MaxBatchBytes and 64 KiB
)

// slowFace opens a stream whose client never reads: its writes block once
// the connection's buffers (HTTP/1.1) or flow-control window (HTTP/2) are
// full. The connection closes when the test ends.
type slowFace struct {
	name string
	open func(t *testing.T, addr string)
}

// slowFaces are every face and protocol a stream is served on: Connect
// (protobuf and JSON) and gRPC-Web over HTTP/1.1, gRPC over h2c, SSE over
// HTTP/1.1 (parked once idle) and over h2c. Each asks for the retained
// snapshot: a stream opened on a full ring starts with a replay.
var slowFaces = []slowFace{
	{"connect+proto", slowH1(subscribeReq("application/connect+proto", false))},
	{"connect+json", slowH1(subscribeReq("application/connect+json", true))},
	{"grpc-web", slowH1(subscribeReq("application/grpc-web+proto", false))},
	{"grpc", slowH2("POST", ringcastv1connect.EventServiceSubscribeEventsProcedure, "application/grpc+proto", slowEnvelope(false))},
	{"sse", slowH1(func(addr string) []byte {
		return fmt.Appendf(nil, "GET /events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	})},
	{"sse-h2", slowH2("GET", "/events", "", nil)},
}

func slowEnvelope(json bool) []byte {
	var msg []byte
	if json {
		msg = []byte(`{"snapshot":"SNAPSHOT_RETAINED"}`)
	} else {
		msg, _ = proto.Marshal(&ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_RETAINED})
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

func subscribeReq(contentType string, json bool) func(addr string) []byte {
	return func(addr string) []byte {
		body := slowEnvelope(json)
		return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			ringcastv1connect.EventServiceSubscribeEventsProcedure, addr, contentType, len(body), body)
	}
}

// slowH1 sends an HTTP/1.1 request from a connection with a small receive
// buffer and reads nothing.
func slowH1(req func(addr string) []byte) func(t *testing.T, addr string) {
	return func(t *testing.T, addr string) {
		c := dialSlow(t, addr)
		if _, err := c.Write(req(addr)); err != nil {
			t.Fatal(err)
		}
	}
}

// slowH2 sends one request over h2c (prior knowledge) and reads nothing:
// the server may send the initial 64 KiB window and then waits for a
// WINDOW_UPDATE that never comes.
func slowH2(method, path, contentType string, body []byte) func(t *testing.T, addr string) {
	return func(t *testing.T, addr string) {
		c := dialSlow(t, addr)
		var hdr bytes.Buffer
		enc := hpack.NewEncoder(&hdr)
		fields := [][2]string{{":method", method}, {":scheme", "http"}, {":authority", addr}, {":path", path}}
		if contentType != "" {
			fields = append(fields, [2]string{"content-type", contentType}, [2]string{"te", "trailers"})
		} else {
			fields = append(fields, [2]string{"accept", "text/event-stream"})
		}
		for _, f := range fields {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		var out bytes.Buffer
		out.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&out, nil)
		_ = fr.WriteSettings()
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr.Bytes(), EndHeaders: true, EndStream: body == nil})
		if body != nil {
			_ = fr.WriteData(1, true, body)
		}
		if _, err := c.Write(out.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
}

// dialSlow dials addr with a 4 KiB receive buffer and 1 KiB segments, set
// before the connection is made: the server's socket then takes a few
// tens of KiB before its writes block, where loopback's 64 KiB segments
// let it grow its send buffer to a few MiB.
func dialSlow(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var rerr, serr error
		err := rc.Control(func(fd uintptr) {
			rerr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 1<<10)
		})
		return errors.Join(err, rerr, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// blockedWrites counts the streams whose write is blocked: goroutines in
// a face's sink waiting for a socket to take bytes (HTTP/1.1, a parked SSE
// stream's worker) or for HTTP/2 flow control.
func blockedWrites() int {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		inSink := strings.Contains(g, "rpc.(*streamSink)") || strings.Contains(g, "sse.(*sink)")
		if inSink && (strings.Contains(g, "waitWrite") || strings.Contains(g, "writeDataFromHandler")) {
			n++
		}
	}
	return n
}

// TestHeapWithSlowReadersOnEveryFace: with streams whose clients never
// read, on every face and protocol, and far more published than the byte
// budgets hold, the heap the server holds stays within
// heapBudgetMultiple × (--max-ring-bytes + --max-state-bytes) plus
// heapPerStream and twice the largest commit per stream — for binary and
// for structured data (whose decoded tree is several times its protobuf
// size). Half the streams are open before anything is published (they
// fall behind; idle SSE streams over HTTP/1.1 are parked then), half are
// opened on a ring holding commits (they start with a replay). Once every
// stream's write is blocked, the ring turns over twice, so what the
// streams hold is theirs alone. A stream used to take a whole batch of 128
// events into one buffer before its one write, and the budgets counted
// structured data at its protobuf size.
func TestHeapWithSlowReadersOnEveryFace(t *testing.T) {
	const ringBytes, stateBytes = 16 << 20, 4 << 20
	const perFace = 16 // half opened on an empty ring, half on a filled one
	shapes := []struct {
		name string
		fact func(i int) *ringcastv1.Fact
		// fill is the part of the ring the commits published before the
		// second half of the streams opens cost: little enough that
		// with all their encodings cached (binary data: base64 in JSON
		// and SSE) the ring drops none, so no stream is lapped before
		// its write blocks.
		fill float64
	}{
		{"binary", func(i int) *ringcastv1.Fact {
			return &ringcastv1.Fact{Topic: "t/a", Type: "blob", Key: fmt.Sprint("k", i%200), Payload: &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{byte(i)}, 48<<10)}}
		}, 0.15},
		{"structured", func(i int) *ringcastv1.Fact {
			m := make(map[string]any, 1000)
			for j := range 1000 {
				m[fmt.Sprintf("gauge-level-reading-%04d", j)] = float64(i + j)
			}
			d, _ := structpb.NewStruct(m)
			return &ringcastv1.Fact{Topic: "t/a", Type: "levels", Key: fmt.Sprint("k", i%200), Payload: &ringcastv1.Fact_Data{Data: d}}
		}, 0.25},
	}
	for _, shape := range shapes {
		for _, face := range slowFaces {
			t.Run(shape.name+"/"+face.name, func(t *testing.T) {
				cfg := ringtest.Config()
				cfg.Window = 1 << 16
				cfg.MaxRingBytes, cfg.MaxStateBytes = ringBytes, stateBytes
				cfg.StateKeys = 1 << 16
				cfg.ParkSSE = true
				cfg.WriteTimeout = time.Hour // a blocked write is never cut here
				cfg.Heartbeat = time.Hour
				ringtest.WaitStreamGoroutines(t, 0) // the last subtest's are gone
				srv := ringtest.Start(t, cfg)
				h := srv.Hub()
				base := heapAfterGC()

				published := 0
				publish := func(n int) {
					for range n {
						if _, err := h.Publish([]*ringcastv1.Fact{shape.fact(published)}, ""); err != nil {
							t.Fatal(err)
						}
						published++
					}
				}
				streams := 0
				open := func() {
					for range perFace / 2 {
						face.open(t, srv.Addr)
						streams++
					}
					for deadline := time.Now().Add(time.Minute); h.Subscribers() < int64(streams); time.Sleep(10 * time.Millisecond) {
						if time.Now().After(deadline) { // a hang guard only
							t.Fatalf("%d of %d streams open", h.Subscribers(), streams)
						}
					}
				}
				// What one commit costs the ring (all are alike), before any
				// stream caches an encoding of it.
				before := h.RingBytes()
				publish(1)
				commit := h.RingBytes() - before
				open()
				publish(int(shape.fill * ringBytes / float64(commit)))
				open()
				for deadline := time.Now().Add(time.Minute); blockedWrites() < streams; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) { // a hang guard only
						t.Fatalf("%d of %d streams blocked in a write (%d open)", blockedWrites(), streams, h.Subscribers())
					}
				}
				limit := uint64(heapBudgetMultiple*float64(ringBytes+stateBytes)) + uint64(streams)*(heapPerStream+2*uint64(commit))
				check := func(when string) {
					t.Helper()
					now := heapAfterGC() // once: a second reading may be higher than the first
					used := now - min(base, now)
					t.Logf("%s on %s, %s: %d of %d streams open, a commit %d KiB on the heap; heap held %.1f MiB = %.2f× (ring %.1f MiB + table %.1f MiB); limit %.1f MiB",
						shape.name, face.name, when, h.Subscribers(), streams, commit>>10, float64(used)/(1<<20), float64(used)/float64(ringBytes+stateBytes),
						float64(h.RingBytes())/(1<<20), float64(h.StateBytes())/(1<<20), float64(limit)/(1<<20))
					if used > limit {
						t.Fatalf("%s: heap held %d bytes with %d slow readers, over %.1f× the budgets plus the streams' allowance (%d)", when, used, streams, heapBudgetMultiple, limit)
					}
				}
				// Every stream holds its batch and its pending write.
				if got := h.Subscribers(); got != int64(streams) {
					t.Fatalf("%d streams open, want %d", got, streams)
				}
				check("all blocked")
				// The ring turns over twice: what the streams hold is theirs
				// alone. (A blocked write may still take a few bytes as the
				// client's kernel compacts its receive queue; a stream that
				// finishes its batch that way finds its cursor lapped and
				// ends with ResyncRequired, as a slow reader does.)
				publish(int(2 * ringBytes / commit))
				check("ring turned over")
			})
		}
	}
}
