package goclient_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// streamCounter counts the streams a subscription opens and signals each.
type streamCounter struct {
	n      atomic.Int64
	opened chan struct{}
	mu     sync.Mutex
	at     []time.Time
}

func newStreamCounter() *streamCounter {
	return &streamCounter{opened: make(chan struct{}, 1<<12)}
}

// option makes a subscription report each stream it opens to sc.
func (sc *streamCounter) option() ringcast.SubscribeOption {
	return ringcast.WithConnectionEvents(func(ev ringcast.ConnectionEvent) {
		if ev.State != ringcast.StateConnecting {
			return
		}
		sc.mu.Lock()
		sc.at = append(sc.at, time.Now())
		sc.mu.Unlock()
		sc.n.Add(1)
		select {
		case sc.opened <- struct{}{}:
		default:
		}
	})
}

// waitStreams waits until at least n streams were opened.
func (sc *streamCounter) waitStreams(t *testing.T, n int64) {
	t.Helper()
	for sc.n.Load() < n {
		ringtest.Wait(t, sc.opened, waitLong, "another stream to open")
	}
}

func TestRestartResyncsBeforeSnapshot(t *testing.T) {
	for _, p := range ringtest.Protocols {
		for _, inline := range []bool{false, true} {
			name := string(p) + "/resync"
			if inline {
				name = string(p) + "/inline"
			}
			t.Run(name, func(t *testing.T) {
				srv := ringtest.Start(t, ringtest.Config())
				var l ledger
				l.publish(t, srv.Hub(), "a", "a")
				c := newClient(t, srv.URL, p)
				opts := []ringcast.SubscribeOption{}
				if inline {
					opts = append(opts, ringcast.WithSnapshotInline())
				}
				sub := c.Subscribe(opts...)
				cons := consume(t, sub)
				before := cons.until(t, isCaughtUp)
				checkExactlyOnce(t, got(before), l.expect(0))
				oldEpoch := srv.Hub().Epoch()

				srv.Restart()
				var l2 ledger
				l2.publish(t, srv.Hub(), "b", "b", "b")
				newEpoch := srv.Hub().Epoch()

				first := cons.next(t)
				if first.Kind != ringcast.KindResynced {
					t.Fatalf("first item after restart: %v, want resynced", first.Kind)
				}
				if r := first.Resync; r.Reason != ringcastv1.Reason_REASON_EPOCH_MISMATCH || r.Inline != inline {
					t.Errorf("resync %+v, want EPOCH_MISMATCH inline=%v", r, inline)
				}
				if !first.Cursor.IsZero() {
					t.Errorf("cursor after resync %v, want zero (discarded)", first.Cursor)
				}
				// Then the new instance's snapshot and live tail, without
				// repeats; the new commit may arrive in the snapshot or live.
				var after []ringcast.Item
				for len(got(after)) < 3 {
					it := cons.next(t)
					if it.Kind == ringcast.KindResynced {
						t.Fatalf("second resync %+v", it.Resync)
					}
					after = append(after, it)
				}
				checkExactlyOnce(t, got(after), l2.expect(0))
				for _, it := range after {
					if it.Kind == ringcast.KindFact && it.Epoch != newEpoch {
						t.Errorf("fact from epoch %x, want the new %x", it.Epoch, newEpoch)
					}
				}
				if cur := sub.Cursor(); cur.Epoch != newEpoch || cur.Epoch == oldEpoch || cur.Seq < 2 {
					t.Errorf("cursor %v: want the new epoch %x, seq >= 2", cur, newEpoch)
				}
				// Continuity on the new instance.
				l2.publish(t, srv.Hub(), "c")
				more := cons.collectFacts(t, 1)
				checkExactlyOnce(t, got(more), l2.expect(2))
			})
		}
	}
}

func TestLeaseAndDrainResumeWithoutResync(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.Lease = 300 * time.Millisecond
			cfg.Window = 4096
			srv := ringtest.Start(t, cfg)
			h := srv.Hub()
			var l ledger
			c := newClient(t, srv.URL, p)
			sc := newStreamCounter()
			sub := c.Subscribe(sc.option())
			cons := consume(t, sub)
			cons.until(t, isCaughtUp)

			// Publish one commit at a time, each consumed before the next,
			// until several leases have ended streams.
			var facts []ringcast.Item
			for sc.n.Load() < 4 {
				l.publish(t, h, "a", "a")
				facts = append(facts, cons.collectFacts(t, 2)...)
			}
			checkExactlyOnce(t, got(facts), l.expect(0))

			// Drain: the stream ends OK; the client resumes with its cursor
			// (no resync) and has consumed everything before the drain.
			l.publish(t, h, "z")
			h.Drain()
			n := sc.n.Load()
			facts = append(facts, cons.collectFacts(t, 1)...)
			sc.waitStreams(t, n+2)
			checkExactlyOnce(t, got(facts), l.expect(0))
			_, head := h.Bounds()
			if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: h.Epoch(), Seq: head}); pos(got) != want {
				t.Errorf("cursor after drain %v, want %v (the DRAINING status)", got, want)
			}
			for {
				select {
				case it := <-cons.items:
					if it.Kind != ringcast.KindCaughtUp {
						t.Errorf("unexpected item after drain: %+v", it)
					}
					continue
				default:
				}
				break
			}
		})
	}
}

func TestLappedReaderResyncs(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.Window = 16
			srv := ringtest.Start(t, cfg)
			h := srv.Hub()
			c := newClient(t, srv.URL, p)
			sub := c.Subscribe()
			blocked := make(chan struct{})
			release := make(chan struct{})
			items := make(chan ringcast.Item, 1<<12)
			done := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer func() {
				cancel()
				ringtest.Wait(t, done, 10*time.Second, "the reader to stop")
			}()
			go func() {
				var final error
				stalled := false
				for it, err := range sub.Items(ctx) {
					if err != nil {
						final = err
						break
					}
					items <- it
					if it.Kind == ringcast.KindFact && !stalled {
						stalled = true
						close(blocked)
						<-release // stop consuming while the ring laps us
					}
				}
				done <- final
			}()

			// Large payloads so the stream's buffers fill and the server
			// has to wait for this reader while the ring moves on.
			// (two facts under the 64 KiB fact limit per commit)
			big, _ := structpb.NewStruct(map[string]any{"pad": strings.Repeat("x", 60<<10)})
			pub := func(i int) uint64 {
				r, err := h.Publish([]*ringcastv1.Fact{
					{Topic: "a", Type: "big", Key: "k", Payload: &ringcastv1.Fact_Data{Data: big}},
					{Topic: "a", Type: "big", Key: "k", Payload: &ringcastv1.Fact_Data{Data: big}},
				}, "")
				if err != nil {
					t.Fatal(err)
				}
				return r.Seq
			}
			pub(0)
			ringtest.Wait(t, blocked, waitLong, "the reader to stall")
			const n = 256
			for i := range n {
				pub(i + 1)
			}
			close(release)

			var seqs []uint64
			for {
				it := ringtest.Wait(t, items, waitLong, "the resync")
				if it.Kind == ringcast.KindFact {
					seqs = append(seqs, it.Seq)
					continue
				}
				if it.Kind != ringcast.KindResynced {
					continue
				}
				if r := it.Resync.Reason; r != ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING && r != ringcastv1.Reason_REASON_CURSOR_TOO_OLD {
					t.Errorf("resync reason %v, want SUBSCRIBER_LAGGING (or CURSOR_TOO_OLD after a cut)", r)
				}
				t.Logf("resync %v after %d facts", it.Resync, len(seqs))
				break
			}
			// Before the resync: contiguous, no repeats.
			for i := 1; i < len(seqs); i++ {
				if seqs[i] != seqs[i-1]+1 && (seqs[i] != seqs[i-1] || i%2 == 0) {
					t.Fatalf("facts before the resync skip from seq %d to %d", seqs[i-1], seqs[i])
				}
			}
			// After it: the snapshot (the retained window), then CaughtUp.
			var snap []ringcast.Item
			for {
				it := ringtest.Wait(t, items, waitLong, "the snapshot")
				if it.Kind == ringcast.KindCaughtUp {
					break
				}
				if it.Kind == ringcast.KindFact {
					snap = append(snap, it)
				}
			}
			_, head := h.Bounds()
			if len(snap) == 0 || snap[len(snap)-1].Seq != head {
				t.Errorf("snapshot after resync ends at %v, want head %d", snap, head)
			}
			if uint64(len(snap)) > 2*uint64(cfg.Window) {
				t.Errorf("snapshot holds %d facts, more than the window", len(snap))
			}
		})
	}
}

// endingService ends every stream at once with OK status, and refuses
// everything else.
type endingService struct {
	ringcastv1connect.UnimplementedEventServiceHandler
	streams atomic.Int64
	err     error // returned by SubscribeEvents when set
}

func (s *endingService) SubscribeEvents(context.Context, *connect.Request[ringcastv1.SubscribeEventsRequest], *connect.ServerStream[ringcastv1.SubscribeEventsResponse]) error {
	s.streams.Add(1)
	return s.err
}

func TestStreamsEndingAtOnceAreBackedOff(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			svc := &endingService{}
			url := fakeServer(t, svc)
			b := ringcast.Backoff{Min: 10 * time.Millisecond, Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond, Reset: time.Hour}
			c := newClient(t, url, p, ringcast.WithBackoff(b))
			sc := newStreamCounter()
			sub := c.Subscribe(sc.option())
			cons := consume(t, sub)
			sc.waitStreams(t, 10)
			err := cons.stop(t)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("iteration ended with %v, want context.Canceled", err)
			}
			select {
			case it := <-cons.items:
				t.Errorf("an empty stream yielded %+v", it)
			default:
			}
			sc.mu.Lock()
			defer sc.mu.Unlock()
			for i := 1; i < len(sc.at); i++ {
				if gap := sc.at[i].Sub(sc.at[i-1]); gap < b.Min {
					t.Errorf("reconnect %d came %v after the previous, below the backoff minimum %v", i, gap, b.Min)
				}
			}
			if srvN, cliN := svc.streams.Load(), sc.n.Load(); srvN > cliN || srvN < cliN-1 {
				t.Errorf("server saw %d streams, client opened %d", srvN, cliN)
			}
		})
	}
}

func TestPermanentErrorsAreReturnedNotRetried(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p)+"/invalid_argument", func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			c := newClient(t, srv.URL, p)
			sc := newStreamCounter()
			sub := c.Subscribe(ringcast.WithTopics("BAD"), sc.option())
			err := firstError(t, sub)
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("err = %v, want invalid_argument", err)
			}
			if n := sc.n.Load(); n != 1 {
				t.Errorf("%d streams opened, want 1 (no retry)", n)
			}
		})
		t.Run(string(p)+"/unauthenticated", func(t *testing.T) {
			svc := &endingService{err: connect.NewError(connect.CodeUnauthenticated, errors.New("no token"))}
			c := newClient(t, fakeServer(t, svc), p)
			err := firstError(t, c.Subscribe())
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Errorf("err = %v, want unauthenticated", err)
			}
			if n := svc.streams.Load(); n != 1 {
				t.Errorf("server saw %d streams, want 1 (no retry)", n)
			}
		})
		t.Run(string(p)+"/unavailable_is_retried", func(t *testing.T) {
			svc := &endingService{err: connect.NewError(connect.CodeUnavailable, errors.New("busy"))}
			c := newClient(t, fakeServer(t, svc), p)
			sc := newStreamCounter()
			sub := c.Subscribe(sc.option())
			cons := consume(t, sub)
			sc.waitStreams(t, 3)
			if err := cons.stop(t); !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
	}
}

// firstError ranges over sub and returns the error that ends it.
func firstError(t *testing.T, sub *ringcast.Subscription) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for it, err := range sub.Items(ctx) {
		if err != nil {
			return err
		}
		t.Errorf("unexpected item %+v", it)
	}
	t.Fatal("the iteration ended without an error")
	return nil
}

func TestCancelStopsPromptly(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p)+"/live", func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			c := newClient(t, srv.URL, p)
			cons := consume(t, c.Subscribe())
			cons.until(t, isCaughtUp)
			if err := cons.stop(t); !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
		t.Run(string(p)+"/backing_off", func(t *testing.T) {
			svc := &endingService{}
			c := newClient(t, fakeServer(t, svc), p, ringcast.WithBackoff(ringcast.Backoff{Min: time.Hour, Initial: time.Hour, Max: time.Hour}))
			sc := newStreamCounter()
			sub := c.Subscribe(sc.option())
			cons := consume(t, sub)
			sc.waitStreams(t, 1)
			if err := cons.stop(t); !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
	}
}

func TestConcurrentIterationIsRefused(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	c := newClient(t, srv.URL, ringcast.ProtocolConnect)
	sub := c.Subscribe()
	cons := consume(t, sub)
	cons.until(t, isCaughtUp)
	if err := firstError(t, sub); !errors.Is(err, ringcast.ErrConcurrentIteration) {
		t.Errorf("err = %v, want ErrConcurrentIteration", err)
	}
}

// silentService catches every stream up, then sends a one-fact commit every
// beat (nothing at all when beat is 0) until the client goes away.
type silentService struct {
	ringcastv1connect.UnimplementedEventServiceHandler
	streams  atomic.Int64
	beat     time.Duration
	announce time.Duration // heartbeat interval announced in CaughtUp (0: none)
}

func (s *silentService) SubscribeEvents(ctx context.Context, req *connect.Request[ringcastv1.SubscribeEventsRequest], st *connect.ServerStream[ringcastv1.SubscribeEventsResponse]) error {
	s.streams.Add(1)
	cu := &ringcastv1.CaughtUp{}
	if s.announce > 0 {
		cu.HeartbeatInterval = durationpb.New(s.announce)
	}
	if err := st.Send(&ringcastv1.SubscribeEventsResponse{InstanceEpoch: 7, Event: &ringcastv1.SubscribeEventsResponse_CaughtUp{CaughtUp: cu}}); err != nil {
		return err
	}
	var tick <-chan time.Time
	if s.beat > 0 {
		t := time.NewTicker(s.beat)
		defer t.Stop()
		tick = t.C
	}
	seq := req.Msg.GetSinceSeq()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			seq++
			commit := &ringcastv1.Commit{FactCount: 1, Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t"}}}
			if err := st.Send(&ringcastv1.SubscribeEventsResponse{Seq: seq, InstanceEpoch: 7, Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: commit}}); err != nil {
				return err
			}
		}
	}
}

// TestSilentStreamIsReconnected: a stream that delivers nothing for the
// idle timeout (a half-open connection) is dropped and resubscribed; time
// the application spends in the loop body does not count as silence.
func TestSilentStreamIsReconnected(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Run("silent", func(t *testing.T) {
				svc := &silentService{}
				c := newClient(t, fakeServer(t, svc), p, ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: time.Millisecond, Max: 5 * time.Millisecond}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				go func() {
					for svc.streams.Load() < 3 && ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
				for _, err := range c.Subscribe(ringcast.WithIdleTimeout(100 * time.Millisecond)).Items(ctx) {
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Fatalf("silent stream surfaced %v, want a quiet reconnect", err)
					}
				}
				if n := svc.streams.Load(); n < 3 {
					t.Fatalf("%d streams opened in 10 s, want reconnects after each 100 ms silence", n)
				}
			})
			t.Run("announced heartbeat sets the default timeout", func(t *testing.T) {
				svc := &silentService{announce: 30 * time.Millisecond} // 3 × 30 ms instead of 45 s
				c := newClient(t, fakeServer(t, svc), p, ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: time.Millisecond, Max: 5 * time.Millisecond}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				go func() {
					for svc.streams.Load() < 3 && ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
				for _, err := range c.Subscribe().Items(ctx) {
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Fatal(err)
					}
				}
				if n := svc.streams.Load(); n < 3 {
					t.Fatalf("%d streams in 10 s: the announced 30 ms heartbeat did not set the idle timeout", n)
				}
			})
			t.Run("busy application", func(t *testing.T) {
				svc := &silentService{beat: 50 * time.Millisecond}
				c := newClient(t, fakeServer(t, svc), p)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				facts := 0
				for it, err := range c.Subscribe(ringcast.WithIdleTimeout(300 * time.Millisecond)).Items(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					if it.Kind != ringcast.KindFact {
						continue
					}
					if facts++; facts == 1 {
						time.Sleep(700 * time.Millisecond) // handling the item: not silence
					}
					if facts == 5 {
						break
					}
				}
				if n := svc.streams.Load(); n != 1 {
					t.Fatalf("%d streams opened, want 1: time in the loop body counted as silence", n)
				}
			})
		})
	}
}
