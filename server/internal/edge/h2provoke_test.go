package edge_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// headerBlock encodes a request's header fields.
func headerBlock(fields ...[2]string) []byte {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range fields {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return block.Bytes()
}

var healthzBlock = headerBlock([2]string{":method", "GET"}, [2]string{":scheme", "http"}, [2]string{":authority", "127.0.0.1"}, [2]string{":path", "/healthz"})

// maxProvoked bounds the streams one provoking connection opens.
const maxProvoked = 50000

// provokeUntilCut speaks HTTP/2 on a new h2c connection to addr: setup's
// frames, then provoke's for stream after stream (odd IDs from 1, at most
// maxProvoked), never an RST_STREAM of its own, until the server cuts the
// connection. It returns the RST_STREAM frames the server sent and its
// GOAWAY, nil when the GOAWAY was lost to the connection's reset (the
// server closes a cut connection with the client's frames unread); it
// fails the test if the connection ends before the server sent more resets
// than the bound of 200, or the hang guard expires.
func provokeUntilCut(t *testing.T, addr string, setup func(fr *http2.Framer), provoke func(fr *http2.Framer, stream uint32)) (int, *http2.GoAwayFrame) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wf := http2.NewFramer(&out, nil)
	wf.AllowIllegalWrites = true
	_ = wf.WriteSettings()
	if setup != nil {
		setup(wf)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // writes until the connection fails, the GOAWAY is read, or the bound
		for stream := uint32(1); stream < 2*maxProvoked; stream += 2 {
			provoke(wf, stream)
			if stream%64 != 63 {
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
			out.Reset()
		}
		_, _ = c.Write(out.Bytes())
	}()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang guard only
	rf := http2.NewFramer(nil, c)
	var resets atomic.Int64
	for {
		f, err := rf.ReadFrame()
		if err != nil {
			if resets.Load() > 200 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
				return int(resets.Load()), nil
			}
			t.Fatalf("connection ended without GOAWAY after the server sent %d resets: %v", resets.Load(), err)
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			resets.Add(1)
		case *http2.GoAwayFrame:
			return int(resets.Load()), f
		}
	}
}

// TestServerResetsProvokedByTheClientAreCut: loops that make the server
// reset stream after stream — HEADERS then WINDOW_UPDATE of 0 on the
// stream, PRIORITY making a stream depend on itself, opening streams past
// --max-h2-streams — send no RST_STREAM of their own, yet the server's
// resets take from the connection's bucket: past --max-h2-resets the
// connection gets GOAWAY (ENHANCE_YOUR_CALM) and the cut is counted.
func TestServerResetsProvokedByTheClientAreCut(t *testing.T) {
	for _, c := range []struct {
		name    string
		setup   func(fr *http2.Framer)
		provoke func(fr *http2.Framer, stream uint32)
	}{
		{"window update of 0", nil, func(fr *http2.Framer, s uint32) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s, BlockFragment: healthzBlock, EndHeaders: true, EndStream: true})
			_ = fr.WriteWindowUpdate(s, 0)
		}},
		{"priority on itself", nil, func(fr *http2.Framer, s uint32) {
			_ = fr.WritePriority(s, http2.PriorityParam{StreamDep: s, Weight: 15})
		}},
		{"past the stream limit", func(fr *http2.Framer) {
			// Two streams whose bodies never come hold the two
			// slots (the read timeout is far longer than the test).
			for _, s := range []uint32{1 << 20, 1<<20 + 2} {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s + 1, BlockFragment: headerBlock(
					[2]string{":method", "POST"}, [2]string{":scheme", "http"}, [2]string{":authority", "127.0.0.1"},
					[2]string{":path", "/ringcast.v1.EventService/Publish"}, [2]string{"content-type", "application/grpc"}), EndHeaders: true})
			}
		}, func(fr *http2.Framer, s uint32) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s + 1<<21, BlockFragment: healthzBlock, EndHeaders: true, EndStream: true})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.Edge.MaxConcurrentStreams = 2
			srv := ringtest.Start(t, cfg)
			resets, ga := provokeUntilCut(t, srv.Addr, c.setup, c.provoke)
			if ga != nil && ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v after %d resets, want ENHANCE_YOUR_CALM", ga.ErrCode, resets)
			}
			if m := ringtest.Scrape(t, srv.URL); !strings.Contains(m, `ringcast_limit_rejections_total{limit="h2_reset"} 1`) {
				t.Fatalf("the cut was not counted (the server sent %d resets):\n%s", resets, grepLines(m, "ringcast_limit_rejections_total"))
			}
		})
	}
}
