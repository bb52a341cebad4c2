package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// The rpc benchmarks measure the Connect handler end to end over real
// loopback HTTP: a ringcast server (the production assembly) and its
// subscribers in one process. The subscribers are minimal clients: they
// read the response body and count the enveloped messages without decoding
// them, so the figures are dominated by the server's work (the clients'
// reading is still included in the process CPU). See docs/performance.md.

const benchRPCWindow = 4096

// benchLevel is a realistic fact payload, shared read-only by every fact.
var benchLevel = func() *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{
		"level_m": 1.234, "trend": "rising", "station": "g-014", "catchment": "ribble",
	})
	if err != nil {
		panic(err)
	}
	return s
}()

func benchRPCFacts() []*ringcastv1.Fact {
	return []*ringcastv1.Fact{{
		Topic:   "gauges/ribble/g-014",
		Type:    "gauge.level",
		Key:     "g-014",
		Payload: &ringcastv1.Fact_Data{Data: benchLevel},
	}}
}

func benchServer(b *testing.B) *ringtest.Server {
	b.Helper()
	cfg := ringtest.Config()
	cfg.Window = benchRPCWindow
	cfg.Heartbeat = time.Hour
	return ringtest.Start(b, cfg)
}

// wireContentType is the response/request content type of p's streams.
func wireContentType(p ringcast.Protocol) string {
	switch p {
	case ringcast.ProtocolGRPC:
		return "application/grpc+proto"
	case ringcast.ProtocolGRPCWeb:
		return "application/grpc-web+proto"
	default:
		return "application/connect+proto"
	}
}

// subscribeBody is an enveloped SubscribeEventsRequest resuming after seq.
func subscribeBody(b *testing.B, epoch, seq uint64) []byte {
	msg, err := proto.Marshal(&ringcastv1.SubscribeEventsRequest{SinceSeq: seq, InstanceEpoch: epoch})
	if err != nil {
		b.Fatal(err)
	}
	env := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(env[1:], uint32(len(msg)))
	return append(env, msg...)
}

// counter is one minimal subscriber: it counts the data messages of its
// stream. Resuming at head, the first is CaughtUp and every later one is
// the next positioned event, so its position is start + count - 1.
type counter struct {
	msgs atomic.Uint64
	rec  atomic.Pointer[arrivalLog] // nil: arrivals not recorded
}

// arrivalLog records when a counter read each message after base: at[i]
// is the time since epoch at which message base+i+1 was read.
type arrivalLog struct {
	epoch time.Time
	base  uint64
	at    []int64
}

// readEnvelopes counts data envelopes on body until it ends or fails.
func (c *counter) readEnvelopes(body io.Reader) error {
	r := bufio.NewReaderSize(body, 32<<10)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if _, err := r.Discard(n); err != nil {
			return err
		}
		if hdr[0] != 0 { // end of stream (Connect) or trailers (gRPC-Web)
			return io.EOF
		}
		if l := c.rec.Load(); l != nil {
			if i := c.msgs.Load() - l.base; i < uint64(len(l.at)) {
				l.at[i] = int64(time.Since(l.epoch)) // before Add: visible to whoever sees the count
			}
		}
		c.msgs.Add(1)
	}
}

// rpcFleet is n minimal subscribers over real HTTP.
type rpcFleet struct {
	start    uint64
	counters []*counter
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	failed   atomic.Int64
}

func startRPCFleet(b *testing.B, s *ringtest.Server, p ringcast.Protocol, n int) *rpcFleet {
	b.Helper()
	h := s.Hub()
	_, head := h.Bounds()
	body := subscribeBody(b, h.Epoch(), head)
	hc := s.HTTPClient(p)
	url := s.URL + ringcastv1connect.EventServiceSubscribeEventsProcedure
	ctx, cancel := context.WithCancel(context.Background())
	f := &rpcFleet{start: head, counters: make([]*counter, n), cancel: cancel}
	for i := range f.counters {
		c := &counter{}
		f.counters[i] = c
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", wireContentType(p))
		if p == ringcast.ProtocolGRPC {
			req.Header.Set("TE", "trailers")
		}
		f.wg.Go(func() {
			res, err := hc.Do(req)
			if err != nil {
				f.failed.Add(1)
				return
			}
			defer res.Body.Close()
			if err := c.readEnvelopes(res.Body); ctx.Err() == nil && !errors.Is(err, io.EOF) || res.StatusCode != http.StatusOK {
				f.failed.Add(1)
			}
		})
	}
	b.Cleanup(f.stop)
	f.waitFor(b, head)
	return f
}

func (f *rpcFleet) stop() {
	f.cancel()
	f.wg.Wait()
}

// minPos is the lowest position reached; start-1 while some subscriber has
// not even received CaughtUp.
func (f *rpcFleet) minPos() uint64 {
	m := ^uint64(0)
	for _, c := range f.counters {
		m = min(m, f.start+c.msgs.Load()-1)
	}
	return m
}

func (f *rpcFleet) waitFor(b *testing.B, seq uint64) {
	deadline := time.Now().Add(30 * time.Second)
	for f.minPos()+1 < seq+1 { // minPos may be start-1 (no CaughtUp yet)
		if f.failed.Load() > 0 {
			b.Fatalf("%d subscribers failed", f.failed.Load())
		}
		if time.Now().After(deadline) {
			b.Fatalf("subscribers stuck below seq %d", seq)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// BenchmarkRPCFanout measures end-to-end deliveries per second from one
// publisher (in-process Hub.Publish, so no publish round trip limits the
// rate) to 100 subscribers per protocol over loopback HTTP: Connect and
// gRPC-Web over HTTP/1.1 (one connection per stream), gRPC over h2c (all
// streams on one connection). One op is one event delivered to every
// subscriber. cpu-ns/delivery and allocs/delivery cover the whole process:
// server, publisher and the minimal clients.
func BenchmarkRPCFanout(b *testing.B) {
	const n = 100
	for _, p := range ringtest.Protocols {
		b.Run(fmt.Sprintf("%s/subscribers=%d", p, n), func(b *testing.B) {
			s := benchServer(b)
			h := s.Hub()
			f := startRPCFleet(b, s, p, n)
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			cpu0, ok0 := processCPU()
			b.ResetTimer()
			start := time.Now()
			var last uint64
			for i := range b.N {
				r, err := h.Publish(benchRPCFacts(), "")
				if err != nil {
					b.Fatal(err)
				}
				last = r.Seq
				if i%64 == 63 && last-f.minPos() > benchRPCWindow/2 {
					f.waitFor(b, last-benchRPCWindow/4)
				}
			}
			f.waitFor(b, last)
			elapsed := time.Since(start)
			b.StopTimer()
			cpu1, ok1 := processCPU()
			runtime.ReadMemStats(&ms1)
			deliveries := float64(n) * float64(b.N)
			b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/deliveries, "allocs/delivery")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/deliveries, "B/delivery")
			if ok0 && ok1 {
				b.ReportMetric(float64(cpu1-cpu0)/deliveries, "cpu-ns/delivery")
			}
			f.stop()
		})
	}
}

// BenchmarkRPCPaced measures CPU per delivery at a steady, moderate rate:
// 100 subscribers per protocol and 1,000 events/s, i.e. 100,000
// deliveries/s, each event published on its own (so every stream writes and
// flushes each event separately, the least favourable case for batching).
// One op is one event; cpu-ns/delivery covers the whole process.
func BenchmarkRPCPaced(b *testing.B) {
	const n, perSecond = 100, 1000
	for _, p := range ringtest.Protocols {
		b.Run(fmt.Sprintf("%s/subscribers=%d/events=%d/s", p, n, perSecond), func(b *testing.B) {
			s := benchServer(b)
			h := s.Hub()
			f := startRPCFleet(b, s, p, n)
			cpu0, ok0 := processCPU()
			b.ResetTimer()
			start := time.Now()
			var last uint64
			for i := range b.N {
				if d := time.Until(start.Add(time.Duration(i) * time.Second / perSecond)); d > 0 {
					time.Sleep(d)
				}
				r, err := h.Publish(benchRPCFacts(), "")
				if err != nil {
					b.Fatal(err)
				}
				last = r.Seq
			}
			f.waitFor(b, last)
			elapsed := time.Since(start)
			b.StopTimer()
			cpu1, ok1 := processCPU()
			deliveries := float64(n) * float64(b.N)
			b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
			if ok0 && ok1 {
				b.ReportMetric(float64(cpu1-cpu0)/deliveries, "cpu-ns/delivery")
			}
			f.stop()
		})
	}
}

// BenchmarkRPCIdleStream measures the server-side memory of an open, idle
// SubscribeEvents stream over HTTP/1.1 (Connect and gRPC-Web): the heap and
// stack in use with 500 caught-up streams open, minus before (after a GC
// each time). The clients are raw TCP connections that sent the request and
// read the first response bytes, so their own share is only the sockets'
// small Go-side state; the server's includes its connection (bufio buffers),
// the request, the handler and stream goroutine, and the hub's stream.
// One op opens, measures and closes 500 streams.
func BenchmarkRPCIdleStream(b *testing.B) {
	const n = 500
	for _, p := range []ringcast.Protocol{ringcast.ProtocolConnect, ringcast.ProtocolGRPCWeb} {
		b.Run(string(p), func(b *testing.B) {
			s := benchServer(b)
			h := s.Hub()
			_, head := h.Bounds()
			body := subscribeBody(b, h.Epoch(), head)
			reqHead := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
				ringcastv1connect.EventServiceSubscribeEventsProcedure, s.Addr, wireContentType(p), len(body))
			request := append([]byte(reqHead), body...)
			var total int64
			for b.Loop() {
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				conns := make([]net.Conn, 0, n)
				for range n {
					c, err := openIdleStream(s.Addr, request)
					if err != nil {
						b.Fatal(err)
					}
					conns = append(conns, c)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				total += int64(m1.HeapAlloc) - int64(m0.HeapAlloc) + int64(m1.StackInuse) - int64(m0.StackInuse)
				if got := h.Subscribers(); got != n {
					b.Fatalf("%d subscribers open, want %d", got, n)
				}
				for _, c := range conns {
					c.Close()
				}
				deadline := time.Now().Add(10 * time.Second)
				for h.Subscribers() != 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
			b.ReportMetric(float64(total)/float64(b.N*n), "bytes/stream")
		})
	}
}

// openIdleStream sends a SubscribeEvents request on a raw connection and
// returns once the response has delivered CaughtUp (the stream is then idle,
// waiting for events). Its read buffer is garbage once it returns, so only
// the socket stays alive on the client side.
func openIdleStream(addr string, request []byte) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(request); err != nil {
		c.Close()
		return nil, err
	}
	// Resuming at head, the chunked response body holds CaughtUp first.
	var buf [4096]byte
	var got []byte
	for !idleResponseComplete(got) {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		k, err := c.Read(buf[:])
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("read response: %w (got %q)", err, got)
		}
		got = append(got, buf[:k]...)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// idleResponseComplete reports whether resp (raw HTTP/1.1 with a chunked
// body) holds the headers and a complete envelope.
func idleResponseComplete(resp []byte) bool {
	i := bytes.Index(resp, []byte("\r\n\r\n"))
	if i < 0 {
		return false
	}
	if !strings.HasPrefix(string(resp), "HTTP/1.1 200") {
		return true // let the caller fail on the subscriber count
	}
	var body []byte
	rest := resp[i+4:]
	for {
		j := bytes.Index(rest, []byte("\r\n"))
		if j < 0 {
			break
		}
		var size int
		if _, err := fmt.Sscanf(string(rest[:j]), "%x", &size); err != nil || len(rest) < j+2+size+2 {
			break
		}
		body = append(body, rest[j+2:j+2+size]...)
		rest = rest[j+2+size+2:]
	}
	envelopes := 0
	for len(body) >= 5 {
		n := 5 + int(binary.BigEndian.Uint32(body[1:5]))
		if len(body) < n {
			break
		}
		envelopes++
		body = body[n:]
	}
	return envelopes >= 1
}
