package hub

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// quietSink parks whenever asked and discards what it is sent.
type quietSink struct{ ended chan error }

func (quietSink) Send(*ringcastv1.SubscribeEventsResponse) error { return nil }
func (quietSink) Park() bool                                     { return true }
func (s quietSink) End(err error)                                { s.ended <- err }

type ctxKey struct{}

// subscribeWithValue subscribes a parking stream whose request context
// carries a value, and returns once the stream parked; done is closed when
// the value has been collected.
func subscribeWithValue(t *testing.T, h *Hub, sink quietSink) (done chan struct{}) {
	t.Helper()
	v := new([64]byte)
	done = make(chan struct{})
	runtime.AddCleanup(v, func(ch chan struct{}) { close(ch) }, done)
	ctx := context.WithValue(context.Background(), ctxKey{}, v)
	if err := h.Subscribe(ctx, Request{}, sink); err != ErrParked {
		t.Fatalf("Subscribe = %v, want ErrParked", err)
	}
	return done
}

// TestParkedStreamHoldsLittle: what a parked stream keeps is its stream
// state, in the 384-byte size class, and a slot on the hub's clock heap:
// not its request's context (a value in it is collected once the stream
// parked), not a wait timer, not a timer of its own.
func TestParkedStreamHoldsLittle(t *testing.T) {
	if n := unsafe.Sizeof(stream{}); n > 384 {
		t.Errorf("a stream is %d bytes, over the 384-byte size class every parked stream pays: keep new fields small and together", n)
	}
	h, err := New(Config{Window: 64, Lease: -1, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sink := quietSink{ended: make(chan error, 8)}
	var dones []chan struct{}
	for range 8 {
		dones = append(dones, subscribeWithValue(t, h, sink))
	}
	for i, done := range dones {
		deadline := time.Now().Add(time.Minute) // a hang guard only
	collect:
		for {
			runtime.GC()
			select {
			case <-done:
				break collect
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("stream %d: its request context's value was never collected: the parked stream keeps the context", i)
			}
		}
	}
	h.runner.clocks.mu.Lock()
	heap := append([]*stream(nil), h.runner.clocks.heap...)
	h.runner.clocks.mu.Unlock()
	if len(heap) != 8 {
		t.Fatalf("%d streams on the clock heap, want the 8 parked", len(heap))
	}
	for i, s := range heap {
		if s.timer != nil {
			t.Errorf("parked stream %d holds a wait timer", i)
		}
	}
}

// TestClocksKeepTheirOrder: streams set, moved and taken off the clock
// heap in random order leave it a heap by due time, every stream knowing
// its place, and fire takes off exactly the due ones, earliest first.
func TestClocksKeepTheirOrder(t *testing.T) {
	var c clocks
	defer c.close()
	now := time.Now()
	ss := make([]*stream, 300)
	for i := range ss {
		ss[i] = &stream{h: &Hub{}}
		c.set(ss[i], now.Add(time.Hour+time.Duration(rand.IntN(1000))*time.Second))
	}
	for range 500 {
		s := ss[rand.IntN(len(ss))]
		switch rand.IntN(3) {
		case 0:
			c.stop(s)
		default:
			c.set(s, now.Add(time.Hour+time.Duration(rand.IntN(1000))*time.Second))
		}
	}
	check := func() {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, s := range c.heap {
			if int(s.clockIdx) != i+1 {
				t.Fatalf("heap[%d] says it is at %d", i, s.clockIdx-1)
			}
			if i > 0 && c.less(i, (i-1)/2) {
				t.Fatalf("heap[%d] is due before its parent", i)
			}
		}
		for _, s := range ss {
			if s.clockIdx != 0 && c.heap[s.clockIdx-1] != s {
				t.Fatal("a stream's place on the heap holds another")
			}
		}
		if len(c.heap) > 0 && !c.at.Equal(c.heap[0].timerDue) {
			t.Fatalf("the timer is set for %v, the earliest clock is %v", c.at, c.heap[0].timerDue)
		}
	}
	check()
	// Five clocks due now: fire takes off exactly those (none is parked,
	// so none is resumed).
	for _, s := range ss[:5] {
		c.set(s, now.Add(-time.Second))
	}
	c.fire()
	c.mu.Lock()
	for i, s := range ss[:5] {
		if s.clockIdx != 0 {
			t.Errorf("clock %d, due, is still set after fire", i)
		}
	}
	c.mu.Unlock()
	check()
}
