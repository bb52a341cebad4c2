package hub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newHub(t testing.TB, cfg hub.Config) *hub.Hub {
	t.Helper()
	if cfg.Lease == 0 {
		cfg.Lease = -1
	}
	h, err := hub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func fact(topic, key string, n int) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"n": float64(n)})
	return &ringcastv1.Fact{Topic: topic, Type: "test.fact", Key: key, Payload: &ringcastv1.Fact_Data{Data: s}}
}

func mustPublish(t testing.TB, h *hub.Hub, facts ...*ringcastv1.Fact) uint64 {
	t.Helper()
	r, err := h.Publish(facts, "")
	if err != nil {
		t.Fatal(err)
	}
	return r.Seq
}

// recorder is a Sink collecting what a stream sends.
type recorder struct {
	mu   sync.Mutex
	msgs []*ringcastv1.SubscribeEventsResponse
	gate chan struct{} // when non-nil, the first Send waits for it to close
}

func (r *recorder) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	return nil
}

func (r *recorder) all() []*ringcastv1.SubscribeEventsResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*ringcastv1.SubscribeEventsResponse(nil), r.msgs...)
}

// run subscribes and waits for the stream to end.
func run(t testing.TB, h *hub.Hub, req hub.Request) []*ringcastv1.SubscribeEventsResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec recorder
	if err := h.Subscribe(ctx, req, &rec); err != nil {
		t.Fatalf("Subscribe(%+v) = %v", req, err)
	}
	return rec.all()
}

// fataler is what testing.T and rapid.T share.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkPositioned verifies strictly increasing positioned seqs and returns
// the seqs of commits and statuses (what an unfiltered client consumes).
func checkPositioned(t fataler, msgs []*ringcastv1.SubscribeEventsResponse) (delivered []uint64) {
	t.Helper()
	var last uint64
	for _, m := range msgs {
		switch m.Event.(type) {
		case *ringcastv1.SubscribeEventsResponse_Commit, *ringcastv1.SubscribeEventsResponse_ServerStatus, *ringcastv1.SubscribeEventsResponse_Progress:
			if m.Seq <= last {
				t.Fatalf("positioned seq %d after %d", m.Seq, last)
			}
			last = m.Seq
			if m.GetProgress() == nil {
				delivered = append(delivered, m.Seq)
			}
		default:
			if m.Seq != 0 {
				t.Fatalf("unpositioned message with seq %d", m.Seq)
			}
		}
	}
	return delivered
}

// TestHandoffNeverDropsOrDuplicates is the replay-to-live property: while a
// publisher runs, subscribers join at random points with random servable
// cursors; each sees exactly the events after its cursor, once, in order.
func TestHandoffNeverDropsOrDuplicates(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		total := rapid.IntRange(1, 300).Draw(rt, "total")
		joins := rapid.SliceOfN(rapid.IntRange(0, total), 1, 6).Draw(rt, "joins")
		h, err := hub.New(hub.Config{Window: 1 << 16, Lease: -1}) // the property is the handoff, not lapping
		if err != nil {
			rt.Fatal(err)
		}
		defer h.Close()
		final := uint64(total) + 1 // + the bind status at seq 1

		type result struct {
			since uint64
			msgs  []*ringcastv1.SubscribeEventsResponse
			err   error
		}
		results := make(chan result, len(joins))
		published := make(chan int, total+1)
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range total {
				if _, err := h.Publish([]*ringcastv1.Fact{fact("a/b", "", i)}, ""); err != nil {
					panic(err)
				}
				published <- i + 1
			}
			close(published)
		})
		sinceDraws := make([]int, len(joins))
		for i := range joins {
			sinceDraws[i] = rapid.IntRange(0, 1<<20).Draw(rt, fmt.Sprintf("since%d", i))
		}
		count := 0
		pending := append([]int(nil), joins...)
		start := func(i int) {
			_, head := h.Bounds()
			since := uint64(sinceDraws[i]) % (head + 1) // 0..head: a fresh or servable cursor
			wg.Go(func() {
				var rec recorder
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := h.Subscribe(ctx, hub.Request{SinceSeq: since, Epoch: h.Epoch(), UntilSeq: final}, &rec)
				results <- result{since, rec.all(), err}
			})
		}
		for i, at := range pending {
			if at == 0 {
				start(i)
			}
		}
		for n := range published {
			count = n
			for i, at := range pending {
				if at == count {
					start(i)
				}
			}
		}
		wg.Wait()
		close(results)
		for r := range results {
			if r.err != nil {
				rt.Fatalf("since %d: %v", r.since, r.err)
			}
			got := checkPositioned(rt, r.msgs)
			from := r.since + 1
			if r.since == 0 {
				from = 1
			}
			if uint64(len(got)) != final-from+1 {
				rt.Fatalf("since %d: got %d events %v, want %d..%d", r.since, len(got), got, from, final)
			}
			for i, seq := range got {
				if seq != from+uint64(i) {
					rt.Fatalf("since %d: event %d has seq %d, want %d", r.since, i, seq, from+uint64(i))
				}
			}
		}
	})
}

// TestLappedSubscriberGetsLaggingWithNoGapBeforeIt blocks a subscriber's
// first write while the ring wraps several times: what it does deliver is
// gap-free, and then it gets ResyncRequired(SUBSCRIBER_LAGGING).
func TestLappedSubscriberGetsLaggingWithNoGapBeforeIt(t *testing.T) {
	const window = 8
	h := newHub(t, hub.Config{Window: window})
	gate := make(chan struct{})
	rec := &recorder{gate: gate}
	done := make(chan error, 1)
	go func() { done <- h.Subscribe(context.Background(), hub.Request{}, rec) }()
	// Wait until the stream is blocked in its first Send, then lap it.
	for h.Subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	publishedOne := mustPublish(t, h, fact("a/b", "", 0))
	for i := range 4 * window {
		mustPublish(t, h, fact("a/b", "", i))
	}
	close(gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lapped stream did not end")
	}
	msgs := rec.all()
	last := msgs[len(msgs)-1]
	rr := last.GetResyncRequired()
	if rr == nil || rr.Reason != ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING {
		t.Fatalf("last message %v, want ResyncRequired(SUBSCRIBER_LAGGING)", last)
	}
	got := checkPositioned(t, msgs)
	for i, seq := range got {
		if seq != uint64(i)+1 {
			t.Fatalf("delivered %v: gap before the resync", got)
		}
	}
	covered := uint64(len(got))
	if rr.RequestedSeq != covered || rr.OldestSeq <= covered+1 || rr.HeadSeq < publishedOne {
		t.Fatalf("ResyncRequired %v after delivering 1..%d", rr, covered)
	}
}

// flushCounter is a Sink that counts its flushes and the commits it got.
type flushCounter struct {
	mu      sync.Mutex
	flushes int
	sent    int           // commits sent since the last flush
	commits int           // commits flushed
	got     chan struct{} // receives after each flush
}

func (f *flushCounter) Send(m *ringcastv1.SubscribeEventsResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.GetCommit() != nil {
		f.sent++
	}
	return nil
}

func (f *flushCounter) Flush() error {
	f.mu.Lock()
	f.flushes++
	f.commits += f.sent
	f.sent = 0
	f.mu.Unlock()
	select {
	case f.got <- struct{}{}:
	default:
	}
	return nil
}

// waitCommits waits until the sink has flushed n commits.
func (f *flushCounter) waitCommits(t *testing.T, n int) {
	t.Helper()
	for {
		if _, commits := f.counts(); commits >= n {
			return
		}
		select {
		case <-f.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("commit %d not delivered", n) // a hang guard, not a timing assertion
		}
	}
}

func (f *flushCounter) flushesSince(before int) int {
	n, _ := f.counts()
	return n - before
}

func (f *flushCounter) counts() (flushes, commits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flushes, f.commits
}

// blockingSink blocks its first commit's Send until release is closed: a
// stream whose write is stuck in flight.
type blockingSink struct {
	entered chan struct{} // closed when the first commit's Send starts
	release chan struct{}
	once    sync.Once
}

func (s *blockingSink) Send(m *ringcastv1.SubscribeEventsResponse) error {
	if m.GetCommit() != nil {
		s.once.Do(func() {
			close(s.entered)
			<-s.release
		})
	}
	return nil
}

// TestCoalescedWakeUpDeliversCloseCommitsInOneWrite: while writes back up
// (one stream's write is stuck in flight), commits published within the
// window reach a waiting subscriber as one batch (one write), and none is
// lost; without a window each is written as it comes. The first commit
// found every stream idle and was written at once.
//
// The test waits for each delivery it counts on rather than for time: the
// first commit's write before the next publishes, and in the control each
// commit's write before the next publish. The coalesced case holds only
// while its four publishes take less than the window (2 s).
func TestCoalescedWakeUpDeliversCloseCommitsInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		coalesce    time.Duration
		waitEach    bool // wait for each commit's write before the next publish
		writes      int  // for the five commits
		description string
	}{
		{2 * time.Second, false, 2, "coalesced"},
		{0, true, 5, "immediate"}, // the control: without the window, writes follow publishes
	} {
		t.Run(tc.description, func(t *testing.T) {
			h := newHub(t, hub.Config{Coalesce: tc.coalesce, Heartbeat: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			stuck := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
			wg.Go(func() { _ = h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: h.Epoch()}, stuck) })
			fc := &flushCounter{got: make(chan struct{}, 1)}
			wg.Go(func() { _ = h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: h.Epoch()}, fc) })
			<-fc.got // CaughtUp flushed: the stream is live
			before, _ := fc.counts()
			mustPublish(t, h, fact("a/b", "", 0))
			<-stuck.entered // the other stream is now inside a write
			fc.waitCommits(t, 1)
			for i := 1; i < 5; i++ {
				if !tc.waitEach {
					time.Sleep(5 * time.Millisecond) // spaced publishes, well inside the window
				}
				mustPublish(t, h, fact("a/b", "", i))
				if tc.waitEach {
					fc.waitCommits(t, i+1)
				}
			}
			fc.waitCommits(t, 5)
			close(stuck.release)
			if n := fc.flushesSince(before); n != tc.writes {
				t.Fatalf("%d writes for 5 commits, want %d", n, tc.writes)
			}
		})
	}
}

// TestCommitFindingStreamsIdleIsNotHeld: with a window far longer than the
// test's hang guard, a commit published after a quiet spell still reaches
// a live stream: a wake-up is only held while commits keep coming.
func TestCommitFindingStreamsIdleIsNotHeld(t *testing.T) {
	h := newHub(t, hub.Config{Coalesce: time.Hour, Heartbeat: time.Hour})
	fc := &flushCounter{got: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: h.Epoch()}, fc) }()
	<-fc.got // CaughtUp flushed: the stream is live
	mustPublish(t, h, fact("a/b", "", 0))
	fc.waitCommits(t, 1) // held, it would not arrive within the hang guard
	cancel()
	<-done
}

// TestFilteredStreamGetsProgressWhileUnrelatedCommitsFlow: a stream whose
// filter skips every commit of a steady flow still hears from the server
// once per heartbeat interval (a Progress with the covered position), long
// before W/4 commits have passed.
func TestFilteredStreamGetsProgressWhileUnrelatedCommitsFlow(t *testing.T) {
	h := newHub(t, hub.Config{Window: 4096, Heartbeat: 100 * time.Millisecond})
	progress := make(chan uint64, 16)
	sink := sinkFunc(func(m *ringcastv1.SubscribeEventsResponse) error {
		if m.GetProgress() != nil {
			select {
			case progress <- m.Seq:
			default:
			}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.Subscribe(ctx, hub.Request{SinceSeq: 1, Epoch: h.Epoch(), Topics: []string{"wanted"}}, sink)
	}()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				mustPublish(t, h, fact("unrelated", "", i))
			}
		}
	})
	var got []uint64
	for len(got) < 3 {
		select {
		case seq := <-progress:
			got = append(got, seq)
		case <-time.After(5 * time.Second):
			t.Fatalf("filtered stream heard %v in 5 s of unrelated commits (one every 5 ms, heartbeat 50 ms)", got)
		}
	}
	close(stop)
	wg.Wait()
	cancel()
	<-done
	if got[2] >= 1024 {
		t.Fatalf("Progress %v only after %d commits: the heartbeat interval did not bound the silence", got, got[2])
	}
}

// sinkFunc adapts a function to hub.Sink.
type sinkFunc func(*ringcastv1.SubscribeEventsResponse) error

func (f sinkFunc) Send(r *ringcastv1.SubscribeEventsResponse) error { return f(r) }

// TestWaitStreamsReturnsOnceEveryStreamEnded: WaitStreams returns at once
// with no stream open, waits while one is, returns once it has ended, and
// returns its context's error when that ends first.
func TestWaitStreamsReturnsOnceEveryStreamEnded(t *testing.T) {
	h := newHub(t, hub.Config{Heartbeat: time.Hour})
	if err := h.WaitStreams(context.Background()); err != nil {
		t.Fatalf("no stream open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{gate: make(chan struct{})} // stuck in its first send
	ended := make(chan error, 1)
	go func() { ended <- h.Subscribe(ctx, hub.Request{}, rec) }()
	for h.Subscribers() != 1 {
		time.Sleep(time.Millisecond)
	}
	expired, stop := context.WithCancel(context.Background())
	stop()
	if err := h.WaitStreams(expired); err != context.Canceled {
		t.Fatalf("a stream open, the wait's context done: %v, want context.Canceled", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- h.WaitStreams(context.Background()) }()
	cancel()
	close(rec.gate)
	<-ended
	if err := <-waited; err != nil || h.Subscribers() != 0 {
		t.Fatalf("after the stream ended: %v with %d streams", err, h.Subscribers())
	}
}
