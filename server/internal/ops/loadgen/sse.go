package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

// ProtocolSSE is --protocol sse: idle streams on the Server-Sent Events face
// (GET /events, docs/sse.md), one HTTP/1.1 connection each.
const ProtocolSSE ringcast.Protocol = "sse"

// caughtUpLine is the line that starts an SSE caught-up frame.
var caughtUpLine = []byte("event: " + names.EventCaughtUp)

// subscribeSSE opens one /events stream at the head (no Last-Event-ID),
// calls caughtUp once its caught-up frame has arrived (or it has failed),
// and reads and discards the rest until ctx ends. Idle mode only: the
// frames are not decoded.
func (r *loadRun) subscribeSSE(ctx context.Context, s *loadSub, caughtUp func()) {
	defer s.done.Store(true)
	live := false
	fail := func(err error) { r.failed(err, live) }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.Server+"/events", nil)
	if err != nil {
		fail(err)
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	if r.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	res, err := r.sse.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			fail(err)
		}
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		fail(fmt.Errorf("GET /events: %s", res.Status))
		return
	}
	br := bufio.NewReaderSize(res.Body, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if ctx.Err() == nil {
				fail(fmt.Errorf("/events stream: %w", err))
			}
			return
		}
		if !live && bytes.HasPrefix(line, caughtUpLine) {
			live = true
			caughtUp()
		}
	}
}
