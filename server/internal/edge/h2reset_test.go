package edge_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// resetUntilCut speaks HTTP/2 on c (the preface not yet sent), opening
// Publish streams and resetting each at once until the server cuts the
// connection, and returns the server's GOAWAY. The writer stops as soon as
// the GOAWAY is read. The server closes a cut connection with the client's
// frames still unread, which resets it, and a reset discards what the
// client had not read yet: so once more resets than the bound allows were
// written, a reset or EOF is taken as the cut too, and nil returned (the
// caller then proves the cut by the client's penalty). It fails the test
// if the connection ends sooner, or the hang guard expires.
func resetUntilCut(t *testing.T, c net.Conn, scheme string) *http2.GoAwayFrame {
	t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", scheme}, {":authority", "127.0.0.1"},
		{":path", "/ringcast.v1.EventService/Publish"}, {"content-type", "application/proto"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wf := http2.NewFramer(&out, nil)
	_ = wf.WriteSettings()
	var resets atomic.Int64 // RST_STREAM frames written
	stop := make(chan struct{})
	defer close(stop)
	go func() { // writes until the connection fails or the GOAWAY is read
		n := int64(0)
		for stream := uint32(1); stream < 1<<30; stream += 2 {
			_ = wf.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true})
			_ = wf.WriteRSTStream(stream, http2.ErrCodeCancel)
			n++
			if stream%64 == 1 {
				continue
			}
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(out.Bytes()); err != nil {
				return
			}
			resets.Store(n)
			out.Reset()
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang guard only
	rf := http2.NewFramer(nil, c)
	for {
		f, err := rf.ReadFrame()
		if err != nil {
			if resets.Load() > 200 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
				t.Logf("connection cut after %d resets; its GOAWAY was lost to the reset: %v", resets.Load(), err)
				return nil
			}
			t.Fatalf("connection ended without GOAWAY after %d resets: %v", resets.Load(), err)
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			return ga
		}
	}
}

// refused dials addr twice during a penalty: the first connection is
// held unserved (closed when the test ends), and it reports whether the
// second is closed unanswered: it sends an HTTP/1.1 request, which a
// served connection answers (over TLS, with a 400 for plaintext), and
// reads nothing before EOF or a reset. The server accepts them in order.
func refused(t *testing.T, addr string) bool {
	t.Helper()
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return true
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") // fails if already closed
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))                      // a hang guard only
	n, err := c.Read(make([]byte, 1))
	return n == 0 && err != nil && !isTimeout(err)
}

// served reports whether a new connection to addr answers a request.
func served(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard only
	n, _ := c.Read(make([]byte, 1))
	return n == 1
}

// checkCut: the connection got GOAWAY ENHANCE_YOUR_CALM after more resets
// than the bound allows (its last stream is past the bucket's 200). With
// no GOAWAY read (nil: lost to the connection's reset), the caller's
// refused check proves the cut: only a cut starts the penalty.
func checkCut(t *testing.T, ga *http2.GoAwayFrame) {
	t.Helper()
	if ga == nil {
		return
	}
	if ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", ga.ErrCode)
	}
	if ga.LastStreamID < 2*200+1 {
		t.Fatalf("cut at stream %d, before the bucket of 200 resets was spent", ga.LastStreamID)
	}
}

// TestRapidResetIsCutOverH2C: an h2c connection opening and resetting
// streams gets GOAWAY (ENHANCE_YOUR_CALM) past --max-h2-resets. A first
// cut costs only the connection: the client's next one is served. Cut
// again, the client serves its penalty: its next connection is held
// unserved and the one after closed at once; all four are counted. A
// connection opened before keeps being served.
func TestRapidResetIsCutOverH2C(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.H2ResetPenalty = time.Hour // longer than the test: no race with its end
	srv := ringtest.Start(t, cfg)
	held, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	scrape2(t, held) // a request first: then the connection idles, kept alive

	for i := range 2 {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		checkCut(t, resetUntilCut(t, c, "http"))
		if i == 0 && !served(t, srv.Addr) {
			t.Fatal("after a first cut, the client's next connection was not served")
		}
	}
	if !refused(t, srv.Addr) {
		t.Fatal("a new connection during the penalty was served")
	}
	if m := scrape2(t, held); !strings.Contains(m, `ringcast_limit_rejections_total{limit="h2_reset"} 4`) {
		t.Fatalf("cut and refusal not counted:\n%s", grepLines(m, "ringcast_limit_rejections_total"))
	}
}

// TestRapidResetIsCutOverTLS: the same over TLS, where ALPN chose h2 and
// the frames are read after decryption: cut twice, the client is refused;
// the four are counted too.
func TestRapidResetIsCutOverTLS(t *testing.T) {
	certFile, keyFile, pool := ringtest.SelfSigned(t)
	cfg := ringtest.Config()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	cfg.Edge.H2ResetPenalty = time.Hour
	_, addr, cancel, done := ringtest.ServeLoopback(t, cfg)
	defer func() { cancel(); ringtest.Wait(t, done, 10*time.Second, "TLS server shutdown") }()
	held, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	scrape2(t, held) // a request first: then the connection idles, kept alive

	for range 2 { // a repeat offender
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("ALPN chose %q, want h2", p)
		}
		checkCut(t, resetUntilCut(t, c, "https"))
	}
	if !refused(t, addr) {
		t.Fatal("a new connection during the penalty was served")
	}
	if m := scrape2(t, held); !strings.Contains(m, `ringcast_limit_rejections_total{limit="h2_reset"} 4`) {
		t.Fatalf("cut and refusal not counted:\n%s", grepLines(m, "ringcast_limit_rejections_total"))
	}
}

// TestCancellingStreamsIsNotRapidReset: a gRPC client (h2c, one
// connection) that cancels a few dozen streams is never cut: its
// connection still serves, and nothing is counted.
func TestCancellingStreamsIsNotRapidReset(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	c := srv.Client(ringcast.ProtocolGRPC)
	for range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{}))
		if err != nil || !s.Receive() {
			t.Fatalf("stream: %v %v", err, s.Err())
		}
		cancel() // RST_STREAM CANCEL
		s.Close()
	}
	d, _ := structpb.NewStruct(map[string]any{"n": 1})
	if _, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t", Payload: &ringcastv1.Fact_Data{Data: d}}}})); err != nil {
		t.Fatalf("publish after the cancels: %v", err)
	}
	if m := ringtest.Scrape(t, srv.URL); !strings.Contains(m, `ringcast_limit_rejections_total{limit="h2_reset"} 0`) {
		t.Fatalf("a client cancelling streams was cut:\n%s", grepLines(m, "ringcast_limit_rejections_total"))
	}
}

// TestMaxH2ResetsIsValidated: a bound beyond any meaning is refused at
// start, by name; negative (no bound) is valid.
func TestMaxH2ResetsIsValidated(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.MaxH2Resets = 1<<20 + 1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "max-h2-resets") {
		t.Fatalf("max-h2-resets %d: %v, want an error naming it", cfg.Edge.MaxH2Resets, err)
	}
	cfg.Edge.MaxH2Resets = -1
	if err := cfg.Validate(); err != nil {
		t.Fatalf("max-h2-resets -1: %v", err)
	}
}
