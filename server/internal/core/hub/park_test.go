package hub_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// parkingSink is a Parker that always parks and records what its stream
// sends, and how it ended.
type parkingSink struct {
	recorder
	parks int // calls to Park, counted on the stream's goroutines
	ended chan error
}

func (s *parkingSink) Park() bool    { s.parks++; return true }
func (s *parkingSink) End(err error) { s.ended <- err }

// TestParkedStreamsMissNoWakeUp: streams that park whenever they would
// wait, with commits published from several goroutines at once, each get
// every commit once and in order — a wake-up that raced with a stream
// parking was not lost — and end through End when the hub closes.
func TestParkedStreamsMissNoWakeUp(t *testing.T) {
	h, err := hub.New(hub.Config{Window: 1 << 14, Lease: -1, Heartbeat: time.Hour, Coalesce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const streams, publishers, rounds = 24, 3, 300
	sinks := make([]*parkingSink, streams)
	for i := range sinks {
		sinks[i] = &parkingSink{ended: make(chan error, 1)}
		if err := h.Subscribe(context.Background(), hub.Request{}, sinks[i]); err != hub.ErrParked {
			t.Fatalf("Subscribe = %v, want ErrParked", err)
		}
	}
	// Rounds of a few commits published at once: each round's last
	// wake-up races with streams parking after the previous ones, and a
	// stream that missed it would stop short of head.
	for round := range rounds {
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				if _, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", round*publishers+p)}, ""); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		_, head := h.Bounds()
		for i, s := range sinks {
			deadline := time.Now().Add(time.Minute) // a hang guard only
			for last(s) < head {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: stream %d stopped at seq %d of %d: a wake-up was lost", round, i, last(s), head)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	h.Close()
	for i, s := range sinks {
		select {
		case err := <-s.ended:
			if err != nil {
				t.Errorf("stream %d ended with %v, want nil", i, err)
			}
		case <-time.After(time.Minute): // a hang guard only
			t.Fatalf("stream %d did not end when the hub closed", i)
		}
		var prev uint64
		for _, m := range s.all() {
			if m.GetSeq() == 0 {
				continue
			}
			if m.GetSeq() != prev+1 {
				t.Fatalf("stream %d: seq %d after %d", i, m.GetSeq(), prev)
			}
			prev = m.GetSeq()
		}
		if s.parks < 2 {
			t.Errorf("stream %d parked %d times", i, s.parks)
		}
	}
	// A parked stream is counted out once its End has returned.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	if err := h.WaitStreams(ctx); err != nil {
		t.Fatalf("WaitStreams after every stream ended: %v", err)
	}
	if n := h.Subscribers(); n != 0 {
		t.Errorf("%d subscribers counted after every stream ended", n)
	}
}

// endCounter is a parking sink whose End records how many streams its hub
// counts as open while it runs.
type endCounter struct {
	recorder
	h     *hub.Hub
	ended chan int64
}

func (s *endCounter) Park() bool    { return true }
func (s *endCounter) End(err error) { s.ended <- s.h.Subscribers() }

// TestParkedStreamCountedUntilItsEndReturns: a parked stream stays counted
// (Subscribers, WaitStreams) while its sink's End runs — the sink closes its
// connection and gives back its slot there — so shutdown, which waits on
// the hub's count alone, waits for that too.
func TestParkedStreamCountedUntilItsEndReturns(t *testing.T) {
	h, err := hub.New(hub.Config{Window: 16, Lease: -1, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s := &endCounter{h: h, ended: make(chan int64, 1)}
	if err := h.Subscribe(context.Background(), hub.Request{}, s); err != hub.ErrParked {
		t.Fatalf("Subscribe = %v, want ErrParked", err)
	}
	h.Close()
	select {
	case n := <-s.ended:
		if n != 1 {
			t.Fatalf("%d streams counted while the parked stream's End ran, want 1 (itself)", n)
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the parked stream did not end when the hub closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	if err := h.WaitStreams(ctx); err != nil || h.Subscribers() != 0 {
		t.Fatalf("after End: WaitStreams = %v, %d streams counted; want nil, 0", err, h.Subscribers())
	}
}

// last is the seq of the last positioned response s got.
func last(s *parkingSink) uint64 {
	msgs := s.all()
	for i := len(msgs) - 1; i >= 0; i-- {
		if seq := msgs[i].GetSeq(); seq != 0 {
			return seq
		}
	}
	return 0
}

// stuckSink is a parkingSink whose sends, once stuck is set, wait for
// release: a stream writing to a reader that stopped reading.
type stuckSink struct {
	parkingSink
	stuck   atomic.Bool
	release chan struct{}
}

func (s *stuckSink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if s.stuck.Load() {
		<-s.release
	}
	return s.parkingSink.Send(m)
}

// TestStuckParkedStreamsHoldUpNoOther: streams resumed on the hub's
// workers and then stuck in a write, more of them than there are
// workers, do not keep another parked stream from getting every commit.
func TestStuckParkedStreamsHoldUpNoOther(t *testing.T) {
	h := newHub(t, hub.Config{Window: 1024, Heartbeat: time.Hour})
	release := make(chan struct{})
	stuck := make([]*stuckSink, runtime.GOMAXPROCS(0)+2)
	for i := range stuck {
		stuck[i] = &stuckSink{parkingSink: parkingSink{ended: make(chan error, 1)}, release: release}
		if err := h.Subscribe(context.Background(), hub.Request{}, stuck[i]); err != hub.ErrParked {
			t.Fatalf("Subscribe = %v, want ErrParked", err)
		}
		stuck[i].stuck.Store(true)
	}
	healthy := &parkingSink{ended: make(chan error, 1)}
	if err := h.Subscribe(context.Background(), hub.Request{}, healthy); err != hub.ErrParked {
		t.Fatalf("Subscribe = %v, want ErrParked", err)
	}
	for n := range 20 {
		seq := mustPublish(t, h, fact("a/b", "", n))
		deadline := time.Now().Add(time.Minute) // a hang guard only
		for last(healthy) < seq {
			if time.Now().After(deadline) {
				t.Fatalf("commit %d: the healthy stream is at %d behind %d stuck ones", seq, last(healthy), len(stuck))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(release)
	h.Close()
	for _, s := range append([]*parkingSink{healthy}, func() (ps []*parkingSink) {
		for _, s := range stuck {
			ps = append(ps, &s.parkingSink)
		}
		return ps
	}()...) {
		select {
		case <-s.ended:
		case <-time.After(time.Minute): // a hang guard only
			t.Fatal("a stream did not end when the hub closed")
		}
	}
}

// TestParkedStreamsHeartbeatAfterTraffic: parked streams woken by bursts
// of commits from several publishers, each commit moving their next
// heartbeat later, still get a heartbeat once the commits stop: a timer
// left running through the bursts was set again for the later time, and
// one that fired while its stream was being parked resumed it. (Under
// -race this also checks the timer's bookkeeping against the workers that
// resume the stream next.)
func TestParkedStreamsHeartbeatAfterTraffic(t *testing.T) {
	const heartbeat = 100 * time.Millisecond
	h := newHub(t, hub.Config{Window: 1 << 14, Heartbeat: heartbeat})
	const streams, publishers = 200, 4
	sinks := make([]*parkingSink, streams)
	for i := range sinks {
		sinks[i] = &parkingSink{ended: make(chan error, 1)}
		if err := h.Subscribe(context.Background(), hub.Request{}, sinks[i]); err != hub.ErrParked {
			t.Fatalf("Subscribe = %v, want ErrParked", err)
		}
	}
	for start := time.Now(); time.Since(start) < 10*heartbeat; {
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for k := range 5 {
					if _, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", p*10+k)}, ""); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(heartbeat / 20)
	}
	_, head := h.Bounds()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for i, s := range sinks {
		for {
			msgs := s.all()
			if n := len(msgs); n > 0 && msgs[n-1].GetHeartbeat().GetHeadSeq() == head && last(s) == head {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stream %d: no heartbeat after the last commit (seq %d); the stream is at %d", i, head, last(s))
			}
			time.Sleep(time.Millisecond)
		}
	}
}
