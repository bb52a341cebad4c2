package ringtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/eventjson"
)

// rawStreamsGuard is the hang guard of OpenRawStreams: for the streams to
// open and for each to deliver the probe.
const rawStreamsGuard = time.Minute

// OpenRawStreams opens n streams on srv from raw client connections (no
// client goroutines): each dials srv, writes req (a whole HTTP/1.1 request
// for a stream), and is read until it has delivered a live event. It waits
// until the hub counts n subscribers, publishes a commit of two facts, one
// of topic "probe/live" with data nested as deep as a stream encodes on
// its own stack (eventjson.OnStack) and one of "other/x", and reads each connection until the probe arrives, so every
// stream has received its caught-up signal and a live event (which a
// stream filtered to "probe" encodes itself, the commit being trimmed).
// The connections close when the test ends.
func OpenRawStreams(t testing.TB, srv *Server, req []byte, n int) []net.Conn {
	t.Helper()
	h := srv.Hub()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for deadline := time.Now().Add(rawStreamsGuard); h.Subscribers() < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard only
			t.Fatalf("%d of %d streams open", h.Subscribers(), n)
		}
	}
	var level any = []any{1.5, "m", true}
	for range eventjson.OnStack.MaxDepth - 2 {
		level = map[string]any{"at": level}
	}
	data, err := structpb.NewStruct(map[string]any{"level": level})
	if err != nil {
		t.Fatal(err)
	}
	probeFacts := []*ringcastv1.Fact{
		{Topic: "probe/live", Type: "x", Payload: &ringcastv1.Fact_Data{Data: data}},
		{Topic: "other/x", Type: "x"},
	}
	if _, err := h.Publish(probeFacts, ""); err != nil {
		t.Fatal(err)
	}
	probe := []byte("probe/live")
	buf := make([]byte, 4096)
	for _, c := range conns { // every stream has written the live event
		_ = c.SetReadDeadline(time.Now().Add(rawStreamsGuard)) // a hang guard only
		var got []byte
		for !bytes.Contains(got, probe) {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("read: %v (after %q)", err, got)
			}
			got = append(got, buf[:k]...)
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return conns
}

// StackInuseAfterGC returns the bytes of goroutine stack in use after two
// garbage collections (which free the stacks of finished goroutines).
func StackInuseAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}

// OpenStuckSSE opens GET /events on addr from a raw connection with a small
// receive buffer, reads the response headers and then nothing: a client
// that stopped reading, whose stream's writes block once a few MiB are
// sent (see BigFact). The connection closes when the test ends.
func OpenStuckSSE(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 256), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stuck SSE client: %v %v", resp, err)
	}
	return c
}

// BigFact is a fact of about 60 KiB (under max-fact-bytes): 200 commits of
// one fill a stuck client's and the server's socket buffers.
func BigFact() *ringcastv1.Fact {
	big, _ := structpb.NewStruct(map[string]any{"pad": strings.Repeat("x", 60<<10)})
	return &ringcastv1.Fact{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_Data{Data: big}}
}
