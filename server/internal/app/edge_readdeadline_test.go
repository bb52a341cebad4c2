package app_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// unsentBody is one request whose body is announced and never sent.
type unsentBody struct {
	method, path, ctype string
	// stream: a response that starts is the answer (it goes on); else
	// the response ends and, over HTTP/1.1, the connection closes.
	stream bool
}

// unsentBodies are the requests tried on an open server: every path
// (gRPC health, reflection, the probes, /events, the console, metrics,
// the EventService).
var unsentBodies = []unsentBody{
	{"POST", "/grpc.health.v1.Health/Check", "application/proto", false},
	{"POST", "/grpc.health.v1.Health/Watch", "application/connect+proto", false},
	{"POST", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "application/connect+proto", false},
	{"POST", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "application/connect+proto", false},
	{"POST", "/ringcast.v1.EventService/Publish", "application/proto", false},
	{"POST", "/ringcast.v1.EventService/SubscribeEvents", "application/connect+proto", false},
	{"GET", "/healthz", "", false},
	{"GET", "/readyz", "", false},
	{"GET", "/", "", false},
	{"GET", "/metrics", "", false},
	{"GET", "/events", "", true},
}

// unsentBodiesAuth are the requests tried with --auth jwt and no token:
// refused before anything reads their bodies.
var unsentBodiesAuth = []unsentBody{
	{"POST", "/ringcast.v1.EventService/Publish", "application/proto", false},
	{"POST", "/ringcast.v1.EventService/SubscribeEvents", "application/connect+proto", false},
	{"GET", "/events", "", false},
}

// sendUnsentBodyH1 sends req over HTTP/1.1 with Content-Length: 100 and no
// body, and fails unless the server answers and (for a request that is
// not a stream) closes the connection before the hang guard.
func sendUnsentBodyH1(t *testing.T, addr string, req unsentBody) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := req.method + " " + req.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
	if req.ctype != "" {
		head += "Content-Type: " + req.ctype + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: no answer: %v", req.method, req.path, err)
	}
	if req.stream {
		resp.Body.Close()
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("%s %s: answered %d but the connection was kept waiting for the body: %v", req.method, req.path, resp.StatusCode, err)
	}
}

// sendUnsentBodyH2 sends req over h2c as a HEADERS frame without
// END_STREAM and no DATA, and fails unless the server answers before the
// hang guard: the stream ends (END_STREAM or RST_STREAM) or, for a stream,
// its response headers come.
func sendUnsentBodyH2(t *testing.T, addr string, req unsentBody) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	ctype := strings.Replace(req.ctype, "application/connect+proto", "application/grpc", 1)
	ctype = strings.Replace(ctype, "application/proto", "application/grpc", 1)
	fields := [][2]string{{":method", req.method}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", req.path}}
	if ctype != "" {
		fields = append(fields, [2]string{"content-type", ctype}, [2]string{"te", "trailers"})
	}
	for _, f := range fields {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	_ = fr.WriteSettings()
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s %s over h2c: no answer: %v", req.method, req.path, err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = fr.WriteSettingsAck()
		}
		if f.Header().StreamID != 1 {
			continue
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			return
		case *http2.HeadersFrame:
			if req.stream || f.StreamEnded() {
				return
			}
		case *http2.DataFrame:
			if f.StreamEnded() {
				return
			}
		}
	}
}

// TestUnsentBodyIsNotWaitedFor: a request whose announced body never
// comes is answered once --read-timeout passes (or at once, when nothing
// reads it), and over HTTP/1.1 its connection is closed rather than kept
// for the body, on every path — gRPC health, reflection, the probes,
// /events, the console, metrics, the EventService, and requests refused by
// --auth jwt — over HTTP/1.1 and h2c.
func TestUnsentBodyIsNotWaitedFor(t *testing.T) {
	cfg := ringtest.Config()
	cfg.Edge.ReadTimeout = 200 * time.Millisecond
	open := ringtest.Start(t, cfg)
	cfg.Auth = app.AuthJWT
	cfg.JWTKeyFile = authtest.NewKeys(t).RSAFile
	closed := ringtest.Start(t, cfg)
	for _, c := range []struct {
		name string
		addr string
		reqs []unsentBody
	}{{"open", open.Addr, unsentBodies}, {"jwt", closed.Addr, unsentBodiesAuth}} {
		for _, req := range c.reqs {
			t.Run(c.name+" "+req.method+" "+req.path, func(t *testing.T) {
				t.Parallel()
				t.Run("http1", func(t *testing.T) { sendUnsentBodyH1(t, c.addr, req) })
				t.Run("h2c", func(t *testing.T) { sendUnsentBodyH2(t, c.addr, req) })
			})
		}
	}
}
