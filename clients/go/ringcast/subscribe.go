package ringcast

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Kind says what an Item is.
type Kind uint8

// The kinds of Item. Progress and heartbeats are never items: they only
// move the cursor (Progress) or keep the stream alive (heartbeats).
const (
	// KindFact is one fact of a commit.
	KindFact Kind = iota + 1
	// KindCaughtUp: the replay or snapshot is done; what follows is live.
	KindCaughtUp
	// KindResynced: the server could not serve the cursor (or the reader
	// fell behind the window). The cursor was discarded and what follows
	// is a fresh snapshot: facts may have been missed. It always comes
	// before the first fact of that snapshot.
	KindResynced
)

func (k Kind) String() string {
	switch k {
	case KindFact:
		return "fact"
	case KindCaughtUp:
		return "caught_up"
	case KindResynced:
		return "resynced"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Item is what a subscription yields: a fact or a lifecycle signal.
type Item struct {
	Kind Kind
	// Epoch is the instance epoch of the stream that delivered the item.
	Epoch uint64

	// Seq is the commit's seq (KindFact).
	Seq uint64
	// Index is the fact's position in the original commit (KindFact). With
	// a topic filter, indexes of one commit may skip values.
	Index uint32
	// Last is true on the last fact of its commit that this subscription
	// delivers (KindFact). With a topic filter that is the last MATCHING
	// fact, whose Index may be below the commit's fact count − 1.
	Last bool
	// Time is the commit's event time (KindFact).
	Time time.Time
	// Fact is the fact itself (KindFact). It is shared: do not modify it.
	Fact *ringcastv1.Fact
	// Traceparent is the W3C trace context of the publish that made the
	// fact's commit (KindFact), when the producer sent one: extract it
	// (e.g. propagation.TraceContext) to continue the producer's trace.
	Traceparent string

	// HeadSeq is the position covered when the stream caught up
	// (KindCaughtUp), or the server's head when it decided to resync
	// (KindResynced).
	HeadSeq uint64
	// SnapshotEvictedKeys (KindCaughtUp after a LATEST_PER_KEY snapshot) is
	// how many keys the server's latest-per-key table had evicted since
	// boot: 0 means the snapshot held every key ever published; more means
	// keys not updated for the longest time may be missing from it.
	SnapshotEvictedKeys uint64
	// Resync tells why and where the subscription resynced (KindResynced).
	Resync *Resync

	// Cursor is the subscription's cursor once this item is consumed: store
	// it together with the item's effects (e.g. in the same transaction)
	// for exactly-once processing.
	Cursor Cursor
}

// Resync describes a discarded cursor: the server's ResyncRequired or, with
// WithSnapshotInline, its Gap.
type Resync struct {
	Reason       ringcastv1.Reason
	RequestedSeq uint64 // the seq the stream asked for (or, lagging, the last position it covered)
	OldestSeq    uint64 // the oldest seq the server still held
	HeadSeq      uint64 // the server's head
	Inline       bool   // a Gap: the snapshot followed on the same stream
}

// SubscribeOption configures a Subscription.
type SubscribeOption func(*subscribeConfig)

type subscribeConfig struct {
	idle      time.Duration
	cursor    Cursor
	topics    []string
	snapshot  ringcastv1.Snapshot
	inline    bool
	untilSeq  uint64
	endAtHead bool
	events    func(ConnectionEvent)
	sinceTime time.Time
}

// WithCursor starts from a cursor saved earlier (default: the zero cursor,
// which starts with a snapshot).
func WithCursor(c Cursor) SubscribeOption { return func(o *subscribeConfig) { o.cursor = c } }

// WithTopics filters facts by topic: an entry matches a topic equal to it
// or below it at a "/" boundary. Commits with no matching fact are skipped
// (the server's Progress still moves the cursor over them).
func WithTopics(topics ...string) SubscribeOption {
	return func(o *subscribeConfig) { o.topics = append(o.topics, topics...) }
}

// WithSnapshot selects what a subscription from the zero cursor (or after a
// resync) receives first: SNAPSHOT_RETAINED (default) or
// SNAPSHOT_LATEST_PER_KEY.
func WithSnapshot(s ringcastv1.Snapshot) SubscribeOption {
	return func(o *subscribeConfig) { o.snapshot = s }
}

// WithSnapshotInline asks the server to answer an unservable cursor with a
// Gap followed by the snapshot on the same stream (ON_UNSERVABLE_SNAPSHOT_
// INLINE) instead of ResyncRequired and a second request. The application
// sees the same KindResynced item either way (with Resync.Inline set).
func WithSnapshotInline() SubscribeOption { return func(o *subscribeConfig) { o.inline = true } }

// WithUntil bounds the read: the iteration ends once every position up to
// seq (of the stream's epoch) is consumed. A bound never splits a commit.
func WithUntil(seq uint64) SubscribeOption { return func(o *subscribeConfig) { o.untilSeq = seq } }

// WithIdleTimeout sets how long a stream may deliver nothing at all (not
// even a heartbeat) before it is taken for dead — a half-open connection
// after a network change, say — and reconnected with the cursor. Time the
// application spends in the loop body does not count. The default is three
// heartbeat intervals plus a second, as the server announces them (in
// CaughtUp and ServerStatus; 45 s until it has); a negative d disables the
// check.
func WithIdleTimeout(d time.Duration) SubscribeOption {
	return func(o *subscribeConfig) { o.idle = d }
}

// WithSinceTime starts the subscription at a point in time instead of with
// a snapshot: the first subscribe sends since_time = t (with since_seq 0),
// and the server replays every retained commit whose event time is at or
// after t, oldest first, then CaughtUp and the tail.
//
// t applies only while the subscription has no position: once any
// positioned message arrived (a fact, Progress, a positioned status) the
// subscription resumes by its cursor, and after a resync it starts from the
// zero cursor (a snapshot) as usual — since_time is never sent again. So
// WithCursor with a saved position wins over t: pass both to start from t
// the first time and from the saved cursor on every later run. When the
// commits at or after t may have been evicted, the server answers as for
// a cursor below its window (a KindResynced item, then a snapshot). A
// zero t is no option.
func WithSinceTime(t time.Time) SubscribeOption {
	return func(o *subscribeConfig) { o.sinceTime = t }
}

// WithEndAtHead makes the read replay what is there and end after the
// KindCaughtUp item instead of tailing.
func WithEndAtHead() SubscribeOption { return func(o *subscribeConfig) { o.endAtHead = true } }

// ConnectionState is a step in a subscription's connection lifecycle,
// reported to the function given to WithConnectionEvents.
type ConnectionState uint8

const (
	// StateConnecting: a subscribe is being sent with Cursor.
	StateConnecting ConnectionState = iota + 1
	// StateOpen: the stream's first response arrived (Epoch).
	StateOpen
	// StateCaughtUp: the stream caught up (Epoch, HeadSeq). Reported on
	// every stream, while the KindCaughtUp item is handed over only when
	// the application was not already live.
	StateCaughtUp
	// StateReconnecting: the stream ended (OK, on Err, or to resync); the
	// subscription reconnects after Delay. A reconnect at once, for a
	// fresh token, reports StateConnecting without it.
	StateReconnecting
)

// String returns the state's name as the TypeScript client spells it.
func (s ConnectionState) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateOpen:
		return "open"
	case StateCaughtUp:
		return "caught_up"
	case StateReconnecting:
		return "reconnecting"
	}
	return "ConnectionState(" + strconv.Itoa(int(s)) + ")"
}

// ConnectionEvent is one step of the connection lifecycle. Which fields
// are set depends on State.
type ConnectionEvent struct {
	State   ConnectionState
	Attempt int           // StateConnecting, StateReconnecting: reconnects since the last progress
	Cursor  Cursor        // StateConnecting: the position the subscribe resumes from
	Epoch   uint64        // StateOpen, StateCaughtUp
	HeadSeq uint64        // StateCaughtUp
	Delay   time.Duration // StateReconnecting: the wait before the next subscribe
	Err     error         // StateReconnecting: why the stream ended (nil for an OK end)
	Resync  bool          // StateReconnecting: the stream ended to resynchronise
}

// WithConnectionEvents makes the subscription report its connection
// lifecycle to f (a status line, a log, a metric). f runs on the goroutine
// ranging over Items, between items; it must return promptly.
func WithConnectionEvents(f func(ConnectionEvent)) SubscribeOption {
	return func(o *subscribeConfig) { o.events = f }
}

// event reports ev to the function given to WithConnectionEvents.
func (s *Subscription) event(ev ConnectionEvent) {
	if s.cfg.events != nil {
		s.cfg.events(ev)
	}
}

// Subscription is a resumable subscription. Range over Items to consume it;
// read Cursor at any moment (from any goroutine) to persist the position.
type Subscription struct {
	c   *Client
	cfg subscribeConfig

	mu  sync.Mutex
	cur Cursor // guarded by mu: the position of what the application was handed

	running atomic.Bool

	// heartbeat is the interval the server announced (ServerStatus
	// limits); 0 until one arrives. Used by the iterating goroutine only.
	heartbeat time.Duration

	// timeSpent: the subscription has resynchronised at least once, so a
	// zero cursor means "snapshot", never WithSinceTime's time again.
	// Used by the iterating goroutine only.
	timeSpent bool
}

// errStreamIdle ends a stream that delivered nothing for the idle timeout.
var errStreamIdle = errors.New("ringcast: stream silent past the idle timeout; reconnecting")

// idleTimeout is the watchdog period for the next stream (0: none).
func (s *Subscription) idleTimeout() time.Duration {
	switch {
	case s.cfg.idle < 0:
		return 0
	case s.cfg.idle > 0:
		return s.cfg.idle
	case s.heartbeat > 0:
		return idleHeartbeatMultiple*s.heartbeat + idleGrace
	}
	return idleUntilHeartbeatKnown
}

// Subscribe returns a subscription; nothing is sent until Items is ranged
// over.
func (c *Client) Subscribe(opts ...SubscribeOption) *Subscription {
	s := &Subscription{c: c}
	for _, opt := range opts {
		opt(&s.cfg)
	}
	s.cur = s.cfg.cursor
	return s
}

// Cursor returns the position of everything the application has consumed:
// every fact handed to the loop body so far, plus the Progress and status
// positions that followed it.
func (s *Subscription) Cursor() Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *Subscription) setCursor(c Cursor) {
	s.mu.Lock()
	s.cur = c
	s.mu.Unlock()
}

// ErrConcurrentIteration is yielded when Items is ranged over while another
// range over the same Subscription is running.
var ErrConcurrentIteration = errors.New("ringcast: subscription is already being iterated")

// Items streams the subscription from its current cursor: facts one at a
// time, and the KindCaughtUp and KindResynced signals. It reconnects on its
// own (see Retryable and Backoff) and resynchronises on its own.
//
// Consumption rule: an item is consumed when it is handed to the loop body.
// Inside the body, Cursor() and Item.Cursor already count it; breaking out
// of the loop leaves the cursor just after the item broken on (mid-commit
// included: the next range, or a new subscription from the saved cursor,
// starts with the following fact). Persist the cursor after handling the
// item to get each fact exactly once across restarts.
//
// The iteration ends:
//   - when the loop body breaks or returns;
//   - without an error when a bound (WithUntil, WithEndAtHead) is reached;
//   - after yielding a non-nil error: a permanent failure (see Retryable),
//     or ctx's error once ctx is done.
//
// No goroutine outlives the iteration. Ranging again continues from the
// cursor.
func (s *Subscription) Items(ctx context.Context) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		if !s.running.CompareAndSwap(false, true) {
			yield(Item{}, ErrConcurrentIteration)
			return
		}
		defer s.running.Store(false)
		s.run(ctx, yield)
	}
}

// streamEnd is how one stream ended.
type streamEnd uint8

const (
	endReconnect streamEnd = iota // stream ended (OK or error): reconnect unless the error is permanent
	endStopped                    // the loop body stopped the iteration
	endFinished                   // the bound was reached
)

type streamResult struct {
	end      streamEnd
	err      error
	progress bool // the cursor moved to a new position during the stream
	caughtUp bool // the stream sent CaughtUp: what follows is live, not a replay
	opened   bool // the stream delivered at least one message
	resync   bool // the stream ended with ResyncRequired
}

func (s *Subscription) run(ctx context.Context, yield func(Item, error) bool) {
	b := s.c.opts.backoff.normalized()
	log := s.c.opts.logger
	attempt := 0
	st := &iterState{}
	refreshed := false // the last stream was reopened for an expired token
	for {
		if ctx.Err() != nil {
			yield(Item{}, ctx.Err())
			return
		}
		start := time.Now()
		r := s.stream(ctx, st, attempt, yield)
		switch r.end {
		case endStopped, endFinished:
			return
		}
		if ctx.Err() != nil {
			yield(Item{}, ctx.Err())
			return
		}
		lived := time.Since(start) >= b.Reset
		if TokenExpired(r.err) {
			switch {
			case refreshed && !r.opened:
				// A fresh token was refused at once (expired already).
				yield(Item{}, r.err)
				return
			case !refreshed || lived:
				// The token ran out during a healthy stream: reconnect
				// now, with a fresh token from the source, from the
				// cursor.
				refreshed = true
				log.DebugContext(ctx, "ringcast: token expired; reconnecting with a fresh token", "cursor", s.Cursor().String())
				continue
			}
			// Expired again soon after the reconnect for a fresh token:
			// the source hands out tokens that do not last, or the
			// server cut a stream it had just accepted. Back off as for
			// any failed stream; never a loop without a delay.
		} else {
			refreshed = false
			if r.err != nil && !Retryable(r.err) {
				yield(Item{}, r.err)
				return
			}
		}
		if r.progress || lived {
			attempt = 0
		}
		d := max(b.Delay(attempt), retryAfter(r.err))
		s.event(ConnectionEvent{State: StateReconnecting, Attempt: attempt, Delay: d, Err: r.err, Resync: r.resync})
		attempt++
		log.DebugContext(ctx, "ringcast: stream ended; reconnecting", "err", r.err, "delay", d, "attempt", attempt, "cursor", s.Cursor().String())
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			yield(Item{}, ctx.Err())
			return
		case <-t.C:
		}
	}
}

// iterState is what one range over Items remembers across its streams.
type iterState struct {
	// caughtUp: the application was told KindCaughtUp and has since seen
	// no replayed fact (one before a stream's CaughtUp) and no resync. A
	// stream's CaughtUp yields KindCaughtUp only when it is false, so a
	// reconnect that replays nothing does not repeat the signal.
	caughtUp bool
}

// request builds the next SubscribeEventsRequest from the cursor; done
// reports that the bound is already reached.
func (s *Subscription) request() (req *ringcastv1.SubscribeEventsRequest, done bool) {
	cur := s.Cursor()
	req = &ringcastv1.SubscribeEventsRequest{
		SinceSeq:      cur.Seq,
		InstanceEpoch: cur.Epoch,
		SinceFact:     cur.Fact,
		// The cursor's fingerprint, so that a log that gave cur.Seq to
		// another commit answers with a resync (REASON_COMMIT_MISMATCH).
		SinceFingerprint: cur.Fingerprint,
		Topics:           s.cfg.topics,
		Snapshot:         s.cfg.snapshot,
		EndAtHead:        s.cfg.endAtHead,
	}
	if s.cfg.inline {
		req.OnUnservable = ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE
	}
	if !s.cfg.sinceTime.IsZero() && cur.Seq == 0 && !s.timeSpent {
		// No position yet: start at the time (WithSinceTime).
		req.SinceTime = timestamppb.New(s.cfg.sinceTime)
	}
	if u := s.cfg.untilSeq; u > 0 {
		switch {
		case cur.Seq > u, cur.Seq == u && cur.Fact == 0:
			return nil, true
		case cur.Seq == u:
			// Inside the bound's last commit: until_seq must exceed
			// since_seq, so ask one further and end here once commit u is
			// consumed (beyondBound covers what the server sends past u).
			req.UntilSeq = u + 1
		default:
			req.UntilSeq = u
		}
	}
	return req, false
}

// beyondBound handles a positioned response past the until bound (possible
// only when resuming inside commit u, which asks until u+1): everything up
// to u is covered, so the cursor moves to (u, 0) and the iteration ends.
func (s *Subscription) beyondBound(epoch, seq uint64) bool {
	u := s.cfg.untilSeq
	if u == 0 || seq <= u {
		return false
	}
	if cur := s.Cursor(); cur.Epoch == epoch && cur.Seq <= u {
		next := Cursor{Epoch: epoch, Seq: u}
		if cur.Seq == u {
			next.Fingerprint = cur.Fingerprint // still commit u
		}
		s.setCursor(next)
	}
	return true
}

// boundReached reports whether the cursor has covered the until bound.
func (s *Subscription) boundReached(c Cursor) bool {
	return s.cfg.untilSeq > 0 && c.Seq >= s.cfg.untilSeq && c.Fact == 0
}

// stream runs one SubscribeEvents stream until it ends.
func (s *Subscription) stream(ctx context.Context, st *iterState, attempt int, yield func(Item, error) bool) (r streamResult) {
	req, done := s.request()
	if done {
		return streamResult{end: endFinished}
	}
	s.event(ConnectionEvent{State: StateConnecting, Attempt: attempt, Cursor: s.Cursor()})
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The watchdog cancels a stream that stays silent; it is paused while
	// the application handles what the stream delivered.
	watchdog := time.AfterFunc(time.Hour, func() { cancel(errStreamIdle) })
	defer watchdog.Stop()
	arm := func() {
		if idle := s.idleTimeout(); idle > 0 { // what the server announced so far
			watchdog.Reset(idle)
		}
	}
	arm()
	stream, err := s.c.rpc.SubscribeEvents(sctx, connect.NewRequest(req))
	if err != nil {
		return streamResult{err: s.idleCause(sctx, err)}
	}
	defer func() {
		cancel(nil) // first: Close must not wait on a live body
		_ = stream.Close()
	}()
	for stream.Receive() {
		watchdog.Stop()
		if !r.opened {
			r.opened = true
			s.event(ConnectionEvent{State: StateOpen, Epoch: stream.Msg().GetInstanceEpoch()})
		}
		end, err := s.handle(ctx, stream.Msg(), st, &r, yield)
		if end != endReconnect || err != nil {
			if errors.Is(err, errResync) {
				err, r.resync = nil, true // an OK end: reconnect from the zero cursor
			}
			r.end, r.err = end, err
			return r
		}
		arm()
	}
	r.err = s.idleCause(sctx, stream.Err())
	return r
}

// idleCause reports errStreamIdle when the watchdog ended the stream.
func (s *Subscription) idleCause(sctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(sctx), errStreamIdle) {
		return errStreamIdle
	}
	return err
}

// errResync marks a stream ended by ResyncRequired (reconnect from zero).
var errResync = errors.New("resync")

// handle applies one response. It returns endStopped or endFinished to end
// the iteration, or endReconnect with a non-nil error to drop the stream.
// Once ctx is done it hands nothing more over (and moves no cursor), even
// when more of a commit is already buffered.
func (s *Subscription) handle(ctx context.Context, msg *ringcastv1.SubscribeEventsResponse, st *iterState, r *streamResult, yield func(Item, error) bool) (streamEnd, error) {
	epoch, seq, fp := msg.GetInstanceEpoch(), msg.GetSeq(), msg.GetFingerprint()
	switch ev := msg.GetEvent().(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit:
		if s.beyondBound(epoch, seq) {
			return endFinished, nil
		}
		from, ok, err := s.accept(epoch, seq)
		if err != nil {
			return endReconnect, err
		}
		if !ok {
			return endReconnect, nil
		}
		facts := ev.Commit.GetFacts()
		for len(facts) > 0 && facts[0].GetIndex() < from {
			facts = facts[1:]
		}
		r.progress = true
		if len(facts) == 0 {
			s.setCursor(Cursor{Epoch: epoch, Seq: seq, Fingerprint: fp})
		}
		at := msg.GetEventTime().AsTime()
		for i, f := range facts {
			if err := ctx.Err(); err != nil {
				return endReconnect, err
			}
			last := i == len(facts)-1
			next := Cursor{Epoch: epoch, Seq: seq, Fact: f.GetIndex() + 1, Fingerprint: fp}
			if last {
				next.Fact = 0
			}
			s.setCursor(next)
			if !r.caughtUp {
				st.caughtUp = false // a replayed fact: CaughtUp is news again
			}
			item := Item{Kind: KindFact, Epoch: epoch, Seq: seq, Index: f.GetIndex(), Last: last, Time: at, Fact: f, Traceparent: ev.Commit.GetTraceparent(), Cursor: next}
			if !yield(item, nil) {
				return endStopped, nil
			}
		}
		return s.afterPosition()
	case *ringcastv1.SubscribeEventsResponse_Progress, *ringcastv1.SubscribeEventsResponse_ServerStatus:
		if hb := msg.GetServerStatus().GetLimits().GetHeartbeatInterval(); hb != nil {
			s.heartbeat = hb.AsDuration()
		}
		if seq == 0 && msg.GetServerStatus() != nil {
			// A replica's status on a durable store: unpositioned
			// (docs/protocol.md, "Stores"); it moves no cursor, whatever
			// its epoch, and does not make the stream healthy.
			return endReconnect, nil // continue the stream
		}
		if s.beyondBound(epoch, seq) {
			return endFinished, nil
		}
		_, ok, err := s.accept(epoch, seq)
		if err != nil {
			return endReconnect, err
		}
		if !ok {
			return endReconnect, nil
		}
		r.progress = true
		s.setCursor(Cursor{Epoch: epoch, Seq: seq, Fingerprint: fp})
		return s.afterPosition()
	case *ringcastv1.SubscribeEventsResponse_CaughtUp:
		if hb := ev.CaughtUp.GetHeartbeatInterval(); hb != nil {
			s.heartbeat = hb.AsDuration()
		}
		if err := ctx.Err(); err != nil {
			return endReconnect, err
		}
		r.caughtUp = true
		s.event(ConnectionEvent{State: StateCaughtUp, Epoch: epoch, HeadSeq: ev.CaughtUp.GetHeadSeq()})
		if !st.caughtUp {
			st.caughtUp = true
			item := Item{Kind: KindCaughtUp, Epoch: epoch, HeadSeq: ev.CaughtUp.GetHeadSeq(), SnapshotEvictedKeys: ev.CaughtUp.GetSnapshotEvictedKeys(), Cursor: s.Cursor()}
			if !yield(item, nil) {
				return endStopped, nil
			}
		}
		if s.cfg.endAtHead {
			return endFinished, nil
		}
	case *ringcastv1.SubscribeEventsResponse_Gap:
		if err := ctx.Err(); err != nil {
			return endReconnect, err
		}
		g := ev.Gap
		return s.resynced(epoch, st, yield, &Resync{Reason: g.GetReason(), RequestedSeq: g.GetRequestedSeq(), OldestSeq: g.GetOldestSeq(), HeadSeq: g.GetHeadSeq(), Inline: true}, nil)
	case *ringcastv1.SubscribeEventsResponse_ResyncRequired:
		if err := ctx.Err(); err != nil {
			return endReconnect, err
		}
		rr := ev.ResyncRequired
		return s.resynced(epoch, st, yield, &Resync{Reason: rr.GetReason(), RequestedSeq: rr.GetRequestedSeq(), OldestSeq: rr.GetOldestSeq(), HeadSeq: rr.GetHeadSeq()}, errResync)
	}
	// Heartbeats (and event kinds newer than this client) are ignored.
	return endReconnect, nil
}

// resynced discards the cursor and hands over the KindResynced item. then is
// returned as the error when the stream is to be dropped (ResyncRequired).
func (s *Subscription) resynced(epoch uint64, st *iterState, yield func(Item, error) bool, rs *Resync, then error) (streamEnd, error) {
	s.setCursor(Cursor{})
	s.timeSpent = true
	st.caughtUp = false
	if !yield(Item{Kind: KindResynced, Epoch: epoch, HeadSeq: rs.HeadSeq, Resync: rs}, nil) {
		return endStopped, nil
	}
	return endReconnect, then
}

// afterPosition ends the iteration once the until bound is covered.
func (s *Subscription) afterPosition() (streamEnd, error) {
	if s.boundReached(s.Cursor()) {
		return endFinished, nil
	}
	return endReconnect, nil
}

// accept checks a positioned response against the cursor. ok is false for
// a position already consumed; from is the first fact index not yet
// consumed when the response is the commit the cursor stopped inside.
func (s *Subscription) accept(epoch, seq uint64) (from uint32, ok bool, err error) {
	cur := s.Cursor()
	switch {
	case seq == 0:
		return 0, false, errors.New("ringcast: positioned response without a seq")
	case cur.Seq == 0:
		return 0, true, nil
	case epoch != cur.Epoch:
		return 0, false, fmt.Errorf("ringcast: stream switched from epoch %016x to %016x without a resync", cur.Epoch, epoch)
	case seq < cur.Seq, seq == cur.Seq && cur.Fact == 0:
		return 0, false, nil
	case seq == cur.Seq:
		return cur.Fact, true, nil
	}
	return 0, true, nil
}
