package hub

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Parker is implemented by sinks whose stream can wait without a goroutine
// of its own (the SSE face's parked streams, docs/sse.md).
//
// Whenever the stream has nothing to send and would wait, Subscribe asks
// Park, on the stream's goroutine. false: the stream waits as usual. true:
// the sink no longer needs the goroutine (it has taken its connection over
// from the HTTP server), and Subscribe returns ErrParked. The stream then
// waits on the hub's parked list, and resumes on a new goroutine when the
// ring's head advances, its heartbeat or lease end is due, or the hub
// closes; whenever it would wait again, it parks again. Once Park has
// returned true it must keep doing so.
//
// A parked stream's end is not returned to anyone: End is called with what
// Subscribe would have returned, on the stream's last goroutine, after the
// stream is counted out. A parked stream resumes with its context's values
// but not its cancellation (the request's context ends with its handler):
// a client that went away is noticed by the sink's next write.
type Parker interface {
	Sink
	Park() bool
	End(err error)
}

// ErrParked is returned by Subscribe when the stream parked: it goes on
// without the caller, and its sink's End reports how it ends.
var ErrParked = errors.New("hub: stream parked")

// mayPark reports whether the stream may park now: it has time before its
// heartbeat or lease end, its client is still there, and the hub is open.
// Checked before the sink's Park, which takes the connection over: from
// then on the stream must go on parked.
func (s *stream) mayPark(ctx context.Context) bool {
	if s.parker == nil || s.untilDue() <= 0 || ctx.Err() != nil {
		return false
	}
	select {
	case <-s.h.done:
		return false
	default:
		return true
	}
}

// park parks the stream, whose sink has agreed to (Parker.Park): it
// resumes on a new goroutine when wake closes, its next heartbeat or lease
// end is due, or the hub closes. It returns ErrParked.
//
// The stream is put on the hub's parked list after it took wake, and
// wakeNow closes wake before it takes the list: a stream that joins the
// list after the list was taken finds wake closed here, so no wake-up is
// lost. A stream is on the list at most once (listed); one resumed by its
// timer stays on it, and a wake-up that finds it running is a no-op.
func (s *stream) park(ctx context.Context, wake <-chan struct{}) error {
	h := s.h
	if s.ctx == nil {
		// The first park. The request's context ends when its handler
		// returns, which is what parking lets it do. The timer is made
		// stopped, so it runs unpark only once parked is set.
		s.ctx = context.WithoutCancel(ctx)
		s.parkTimer = time.AfterFunc(time.Hour, s.unpark)
		s.parkTimer.Stop()
	}
	d := s.untilDue()
	s.parked.Store(true) // from here on, the stream may be resumed
	s.parkTimer.Reset(d)
	h.parkMu.Lock()
	if !s.listed {
		s.listed = true
		h.parked = append(h.parked, s)
	}
	h.parkMu.Unlock()
	select {
	case <-wake:
		s.unpark()
	case <-h.done:
		s.unpark()
	default:
	}
	return ErrParked
}

// unpark resumes the stream on a new goroutine, if it is parked.
func (s *stream) unpark() {
	if !s.parked.CompareAndSwap(true, false) {
		return
	}
	s.parkTimer.Stop()
	go s.resume()
}

// resume runs a parked stream until it parks again or ends.
func (s *stream) resume() {
	err := s.tick(time.Now())
	if err == nil {
		err = s.loop(s.ctx)
	}
	if err == ErrParked {
		return
	}
	err = s.end(err)
	s.unlist()
	s.ended()
	s.parker.End(err)
}

// unlist takes an ended stream off the parked list, which would otherwise
// hold it until the next wake-up.
func (s *stream) unlist() {
	h := s.h
	h.parkMu.Lock()
	defer h.parkMu.Unlock()
	if !s.listed {
		return
	}
	s.listed = false
	if i := slices.Index(h.parked, s); i >= 0 {
		h.parked = slices.Delete(h.parked, i, i+1)
	}
}

// unparkAll resumes every stream on the parked list (after wake closed, or
// when the hub closes), and empties the list.
func (h *Hub) unparkAll() {
	h.parkMu.Lock()
	list := h.parked
	if len(list) == 0 {
		h.parkMu.Unlock()
		return
	}
	h.parked = make([]*stream, 0, len(list))
	for _, s := range list {
		s.listed = false
	}
	h.parkMu.Unlock()
	for _, s := range list {
		s.unpark()
	}
}
