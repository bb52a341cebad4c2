//go:build !race

package sse_test

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/ringtest"
)

// TestIdleStreamStacks: an open /events stream that has received its
// caught-up frame and a live event keeps a goroutine stack of 8 KiB (plus
// net/http's 2 KiB background reader), not the 16 KiB it grew to when its
// query was validated, its headers written and its frames encoded on its own
// stack. Measured over 200 streams from raw client connections (no client
// goroutines), after a GC, which frees the helpers' stacks. Not run with the
// race detector, whose instrumentation enlarges every frame.
func TestIdleStreamStacks(t *testing.T) {
	const n = 200
	const limit = 14 << 10 // per stream: ~11 KB now, ~19 KB before
	srv := ringtest.Start(t, ringtest.Config())
	h := srv.Hub()
	req := fmt.Appendf(nil, "GET /events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", srv.Addr)
	before := stacksAfterGC()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for deadline := time.Now().Add(time.Minute); h.Subscribers() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard only
			t.Fatalf("%d of %d streams open", h.Subscribers(), n)
		}
	}
	if _, err := h.Publish([]*ringcastv1.Fact{{Topic: "probe/live", Type: "x"}}, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns { // every stream has written the live event
		_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard only
		var got []byte
		buf := make([]byte, 4096)
		for !bytes.Contains(got, []byte("probe/live")) {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("read: %v (after %q)", err, got)
			}
			got = append(got, buf[:k]...)
		}
	}
	per := float64(stacksAfterGC()-before) / n
	t.Logf("%.0f bytes of goroutine stack per open stream", per)
	if per > limit {
		t.Fatalf("%.0f bytes of goroutine stack per open stream, want at most %d", per, limit)
	}
}

func stacksAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}
