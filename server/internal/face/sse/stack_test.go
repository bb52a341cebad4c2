//go:build !race

package sse_test

import (
	"fmt"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
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
	req := fmt.Appendf(nil, "GET /events?topic=probe HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", srv.Addr)
	before := ringtest.StackInuseAfterGC()
	ringtest.OpenRawStreams(t, srv, req, n)
	per := float64(ringtest.StackInuseAfterGC()-before) / n
	t.Logf("%.0f bytes of goroutine stack per open stream", per)
	if per > limit {
		t.Fatalf("%.0f bytes of goroutine stack per open stream, want at most %d", per, limit)
	}
}
