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
// its stream slot given back), on every face, hijacked streams included.
// A parked stream resumes with a context of its own, with neither the
// request's values nor its cancellation: the request's context ends with
// its handler, and keeping it would keep what it holds (the connection's
// and the request's state) for as long as the stream stays parked.
// Nothing a stream does once it has parked reads a value of its request's
// context. A client that went away is noticed by the sink's next write.
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
func (s *stream) park(wake <-chan struct{}) error {
	h := s.h
	if cap(s.batch) > parkedBatchCap {
		// A parked stream keeps no room for a backlog it no longer has:
		// a stream that replayed a long history would otherwise hold a
		// batch's worth of pointers while it waits.
		s.batch = nil
	}
	// The request's context ends when its handler returns, which is what
	// parking lets it do; it is not kept (Parker): the stream resumes with
	// context.Background.
	//
	// The stream's clock (on the hub's clocks) is left set while the
	// stream runs, and set again only when it has fired (timerArmed
	// clear) or would fire after due (which only moves later, with
	// lastSend): a stream woken by every commit then costs no clock
	// operation per wake-up, only a spare resume per heartbeat interval.
	// Its fields are written before parked is set, so whoever resumes the
	// stream next sees them.
	if due := s.due(); !s.timerArmed.Load() || s.timerDue.After(due) {
		s.timerArmed.Store(true)
		h.runner.clocks.set(s, due)
	}
	s.parked.Store(true) // from here on, the stream may be resumed
	// Listed only while still parked: a stream resumed meanwhile is
	// listed by whoever runs it, when it parks again (or it ends).
	h.parkMu.Lock()
	if !s.listed && s.parked.Load() {
		s.listed, s.listIdx = true, int32(len(h.parked))
		h.parked = append(h.parked, s)
	}
	h.parkMu.Unlock()
	select {
	case <-wake:
		s.unpark()
	case <-h.done:
		s.unpark()
	default:
		// A clock that fired before parked was set could not resume the
		// stream. clocks.fire clears timerArmed before it tries to, so it
		// either succeeds or is seen here.
		if !s.timerArmed.Load() {
			s.unpark()
		}
	}
	return ErrParked
}

// parkedBatchCap is the most room for events a parked stream keeps: as
// many as a live stream is usually woken for.
const parkedBatchCap = 8

// unpark resumes the stream, if it is parked.
func (s *stream) unpark() {
	if s.claim() {
		s.h.runner.add(s)
	}
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
		err = s.loop(context.Background())
	}
	if err == ErrParked {
		return
	}
	s.h.runner.clocks.stop(s)
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

	clocks clocks // the parked streams' heartbeat and lease clocks
}

// clocks resume parked streams when their heartbeat or lease end is due:
// a heap of the streams whose clock is set, by when (stream.timerDue), and
// one timer for the earliest. A timer per stream would cost each parked
// stream about 130 bytes more, most of what it holds besides its stream.
type clocks struct {
	mu    sync.Mutex
	heap  []*stream   // by timerDue; a stream's clockIdx is its index + 1
	timer *time.Timer // fires at heap[0].timerDue (at)
	at    time.Time   // zero: timer stopped
}

// set sets s's clock to due (s.timerArmed is set).
func (c *clocks) set(s *stream, due time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.timerDue = due
	if s.clockIdx == 0 {
		c.heap = append(c.heap, s)
		s.clockIdx = int32(len(c.heap))
		c.up(len(c.heap) - 1)
	} else {
		c.up(int(s.clockIdx - 1))
		c.down(int(s.clockIdx - 1))
	}
	c.arm()
}

// stop takes s's clock off, if it is set.
func (c *clocks) stop(s *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.clockIdx != 0 {
		c.remove(int(s.clockIdx - 1))
	}
}

// arm sets the timer for the earliest clock, unless it is set for then
// already. c.mu is held.
func (c *clocks) arm() {
	if len(c.heap) == 0 || c.heap[0].timerDue.Equal(c.at) {
		return
	}
	c.at = c.heap[0].timerDue
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(c.at), c.fire)
		return
	}
	c.timer.Reset(time.Until(c.at))
}

// fire resumes every parked stream whose clock is due, all at once.
func (c *clocks) fire() {
	now := time.Now()
	var due []*stream
	c.mu.Lock()
	c.at = time.Time{}
	for len(c.heap) > 0 && !c.heap[0].timerDue.After(now) {
		s := c.heap[0]
		c.remove(0)
		due = append(due, s)
	}
	c.arm()
	c.mu.Unlock()
	woken := due[:0]
	for _, s := range due {
		s.timerArmed.Store(false) // before the claim: see park
		if s.claim() {
			woken = append(woken, s)
		}
	}
	if len(woken) > 0 {
		woken[0].h.runner.add(woken...) // one hub's clocks: its streams
	}
}

// close stops the timer (the hub closed: its streams end).
func (c *clocks) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.at = time.Time{}
}

// remove takes heap[i] off. c.mu is held.
func (c *clocks) remove(i int) {
	last := len(c.heap) - 1
	s := c.heap[i]
	c.swap(i, last)
	c.heap[last] = nil
	c.heap = c.heap[:last]
	s.clockIdx = 0
	if i < last {
		c.up(i)
		c.down(int(c.heap[i].clockIdx - 1))
	}
}

func (c *clocks) less(i, j int) bool { return c.heap[i].timerDue.Before(c.heap[j].timerDue) }

func (c *clocks) swap(i, j int) {
	c.heap[i], c.heap[j] = c.heap[j], c.heap[i]
	c.heap[i].clockIdx, c.heap[j].clockIdx = int32(i+1), int32(j+1)
}

func (c *clocks) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !c.less(i, p) {
			return
		}
		c.swap(i, p)
		i = p
	}
}

func (c *clocks) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(c.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(c.heap) && c.less(r, l) {
			m = r
		}
		if !c.less(m, i) {
			return
		}
		c.swap(i, m)
		i = m
	}
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
	r.clocks.close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.cond.Broadcast()
}
