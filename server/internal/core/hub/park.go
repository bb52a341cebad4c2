package hub

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// Parker is implemented by sinks whose stream can wait without a goroutine
// of its own (the SSE face's parked streams, docs/sse.md).
//
// Whenever the stream has nothing to send and would wait, Subscribe asks
// Park, on the stream's goroutine. false: the stream waits as usual. true:
// the sink no longer needs the goroutine (it has taken its connection over
// from the HTTP server), and Subscribe returns ErrParked. The stream then
// waits on the hub's parked list, and resumes on one of the hub's workers
// (runner) when the ring's head advances, its heartbeat or lease end is
// due, or the hub closes; whenever it would wait again, it parks again.
// Once Park has returned true it must keep doing so.
//
// A parked stream's end is not returned to anyone: End is called with what
// Subscribe would have returned, on the worker that ran it last, and the
// stream is counted out once End has returned: WaitStreams, which shutdown
// waits on, so waits for the sink's own ending too (its connection closed,
// its stream slot given back), on every face, hijacked streams included. A parked stream
// resumes with its context's values but not its cancellation (the
// request's context ends with its handler): a client that went away is
// noticed by the sink's next write.
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
// resumes on a worker when wake closes, its next heartbeat or lease
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
		// returns, which is what parking lets it do.
		s.ctx = context.WithoutCancel(ctx)
		s.parkTimer = time.AfterFunc(time.Hour, s.timerFired)
		s.parkTimer.Stop()
	}
	// The timer is left running while the stream runs, and set again only
	// when it has fired (timerArmed clear) or would fire after due (which
	// only moves later, with lastSend): a stream woken by every commit
	// then costs no timer operation per wake-up, only a spare resume per
	// heartbeat interval. Its fields are written before parked is set,
	// so whoever resumes the stream next sees them.
	if due := s.due(); !s.timerArmed.Load() || s.timerDue.After(due) {
		s.timerArmed.Store(true)
		s.timerDue = due
		s.parkTimer.Reset(time.Until(due))
	}
	s.parked.Store(true) // from here on, the stream may be resumed
	// Listed only while still parked: a stream resumed meanwhile is
	// listed by whoever runs it, when it parks again (or it ends).
	h.parkMu.Lock()
	if !s.listed && s.parked.Load() {
		s.listed, s.listIdx = true, len(h.parked)
		h.parked = append(h.parked, s)
	}
	h.parkMu.Unlock()
	select {
	case <-wake:
		s.unpark()
	case <-h.done:
		s.unpark()
	default:
		// A timer that fired before parked was set could not resume the
		// stream. timerFired clears timerArmed before it tries to, so it
		// either succeeds or is seen here.
		if !s.timerArmed.Load() {
			s.unpark()
		}
	}
	return ErrParked
}

// unpark resumes the stream, if it is parked.
func (s *stream) unpark() {
	if s.claim() {
		s.h.runner.add(s)
	}
}

// timerFired runs when the stream's heartbeat or lease end may be due.
func (s *stream) timerFired() {
	s.timerArmed.Store(false)
	s.unpark()
}

// claim takes a parked stream off parking: true for the one caller that
// then resumes it.
func (s *stream) claim() bool {
	return s.parked.CompareAndSwap(true, false)
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
	s.parkTimer.Stop()
	err = s.end(err)
	s.unlist()
	s.parker.End(err)
	s.ended()
}

// Parked is the number of streams waiting without a goroutine (on the
// parked list): not counting parked streams a worker is running.
func (h *Hub) Parked() int {
	h.parkMu.Lock()
	defer h.parkMu.Unlock()
	return len(h.parked)
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
	last := len(h.parked) - 1
	moved := h.parked[last]
	h.parked[s.listIdx], moved.listIdx = moved, s.listIdx
	h.parked[last] = nil
	h.parked = h.parked[:last]
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
	woken := list[:0]
	for _, s := range list {
		if s.claim() {
			woken = append(woken, s)
		}
	}
	h.runner.add(woken...)
}

// runner resumes parked streams on a few goroutines instead of one new
// goroutine each: a wake-up of many streams is served by workers that run
// them one after another, without a goroutine switch between streams.
//
// A worker writing to a reader that stopped reading waits for it (up to
// the write timeout, a stream's own); the streams queued behind it must
// not. So while the queue is not empty a timer checks it every stallAfter,
// and when no worker took a stream from it meanwhile (workers held up by
// such writes, or by CPUs too busy to run them), it starts one more
// worker. Workers beyond the first max(GOMAXPROCS, 2) leave once the queue
// is empty; the rest wait for work until the hub closes.
type runner struct {
	mu      sync.Mutex
	cond    sync.Cond // a worker waits on it for work (mu)
	queue   []*stream
	next    int // queue[next:] waits
	workers int // running
	idle    int // waiting on cond
	base    int // workers that stay while idle
	taken   uint64
	// stall fires stallAfter after it was armed (while the queue is not
	// empty); takenAt is taken when it was armed.
	stall   *time.Timer
	armed   bool
	takenAt uint64
	closed  bool
}

// stallAfter is how long the queue may go without a worker taking from it
// before another worker starts: a write that has not returned by then is
// waiting for its reader.
const stallAfter = time.Millisecond

// add queues streams to resume.
func (r *runner) add(ss ...*stream) {
	if len(ss) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stall == nil {
		r.cond.L = &r.mu
		r.base = max(runtime.GOMAXPROCS(0), 2)
		r.stall = time.AfterFunc(time.Hour, r.checkStall)
		r.stall.Stop()
	}
	r.queue = append(r.queue, ss...)
	if r.idle > 0 {
		r.cond.Broadcast()
	}
	for n := min(len(r.queue)-r.next, r.base) - r.idle; n > 0 && r.workers < r.base; n-- {
		r.start()
	}
	if !r.armed {
		r.armed, r.takenAt = true, r.taken
		r.stall.Reset(stallAfter)
	}
}

// start starts a worker. r.mu is held.
func (r *runner) start() {
	r.workers++
	go r.work()
}

// work resumes queued streams until there are none and it is not needed.
func (r *runner) work() {
	r.mu.Lock()
	for {
		for r.next == len(r.queue) {
			r.queue, r.next = r.queue[:0], 0
			if r.closed || r.workers > r.base {
				r.workers--
				r.mu.Unlock()
				return
			}
			r.idle++
			r.cond.Wait()
			r.idle--
		}
		s := r.queue[r.next]
		r.queue[r.next] = nil
		r.next++
		r.taken++
		if r.next > len(r.queue)/2 && r.next > 64 {
			// Keep a queue that never quite empties (saturated CPUs)
			// from growing: move what waits to the front.
			r.queue = r.queue[:copy(r.queue, r.queue[r.next:])]
			r.next = 0
		}
		if r.next == len(r.queue) && r.armed {
			// Nothing waits behind this stream: no stall to watch for
			// (and no timer firing after every wake-up of a few streams).
			r.armed = false
			r.stall.Stop()
		}
		r.mu.Unlock()
		s.resume()
		r.mu.Lock()
	}
}

// checkStall runs stallAfter after the timer was armed: it starts a worker
// when streams wait and no worker took one meanwhile, and re-arms while
// streams wait.
func (r *runner) checkStall() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == len(r.queue) {
		r.armed = false
		return
	}
	if r.taken == r.takenAt && r.idle == 0 {
		r.start()
	}
	r.takenAt = r.taken
	r.stall.Reset(stallAfter)
}

// close lets idle workers leave; streams still queued are resumed first.
func (r *runner) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.cond.Broadcast()
}
