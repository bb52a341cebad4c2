package hub

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
	"github.com/ringcast/ringcast/server/internal/core/topic"
)

// maxBatch bounds how many events a stream copies out of the ring per lock.
const maxBatch = 128

// MaxBatchBytes bounds by bytes what one stream holds at a time, on every
// face and protocol. A batch a stream takes out of the ring (or reads from
// a Log) stops before the events' cost (Event.Size, what they hold on the
// heap) would pass it; one event larger than that is still a batch of its
// own. A sink that buffers a batch's encodings for one write (Flusher)
// writes what it holds before an encoding would take it past this, and
// writes one encoding as large straight from where it lies. A stream whose
// client stopped reading thus holds at most about twice this plus one
// event, however far behind it is and however slowly its writes drain
// (docs/limits.md, "Heap, and slow readers"). It is the one value of
// BatchBytes, whose methods are the bound's rule at every site.
const MaxBatchBytes BatchBytes = 256 << 10

// BatchBytes is a bound by bytes on what one stream holds at a time
// (MaxBatchBytes): the hub's batches out of the ring and a Log, and the
// faces' write buffers (package stream's Batch, the RPC sink), all apply
// it through Over and Alone.
type BatchBytes int64

// Over reports whether n bytes held (or about to be) are past b: a batch
// stops before the item that would take it there, unless that item is its
// first; a buffer is written out before it.
func (b BatchBytes) Over(n int64) bool { return n > int64(b) }

// Alone reports whether one encoding of n bytes is a write of its own, made
// from where it lies without a copy into a buffer.
func (b BatchBytes) Alone(n int) bool { return int64(n) >= int64(b) }

// Sink receives a stream's responses in order. Responses may be shared with
// other streams: a Sink must not modify them.
type Sink interface {
	Send(*ringcastv1.SubscribeEventsResponse) error
}

// Flusher is implemented by sinks that buffer: Subscribe calls Flush after
// each batch of events and after each control message, so a subscriber that
// is behind gets its backlog in as few writes as possible.
type Flusher interface {
	Flush() error
}

// EventSink is implemented by sinks that can make use of the event behind a
// shared response (its cached encodings, see Event.Cache): Subscribe calls
// SendEvent(ev) instead of Send(ev.Response()) whenever it sends an event's
// shared response unchanged.
type EventSink interface {
	Sink
	SendEvent(*Event) error
}

// Subscribe serves one stream on the calling goroutine until it ends:
//
//   - nil when the stream ended as docs/protocol.md says it ends with OK status
//     (ResyncRequired sent, bound reached, lease expired, hub drained);
//   - ctx.Err() when ctx was cancelled (the client went away);
//   - the sink's error when a send failed.
//
// Every positioned response it sends has a seq strictly greater than the
// previous positioned one, and no event between the start position and the
// end is skipped without a Progress covering it.
//
// With a sink that parks (Parker), Subscribe may instead return ErrParked
// while the stream goes on: the sink's End then reports how it ended.
//
// A request is admitted first (Admit) unless it was already: a refusal is
// returned as the Admitter gave it, before any stream is counted or sent.
// The stream's topics and expiry are then the admission's.
func (h *Hub) Subscribe(ctx context.Context, req Request, sink Sink) (err error) {
	req, err = h.Admit(ctx, req)
	if err != nil {
		return err
	}
	req = req.scoped()
	h.subscribers.Add(1)
	h.cfg.Observer.StreamStarted(req.Face)
	s := &stream{h: h, req: req, sink: sink, lastSend: time.Now()}
	defer func() {
		if err != ErrParked {
			s.ended()
		}
	}()
	s.parker, _ = sink.(Parker)
	if len(req.Topics) > 0 {
		s.match = topic.Matcher(req.Topics)
	}
	if h.cfg.Lease > 0 {
		j := 1 + h.cfg.LeaseJitter*(2*rand.Float64()-1)
		s.leaseEnd = s.lastSend.Add(time.Duration(float64(h.cfg.Lease) * j))
	}
	if !req.Expiry.IsZero() && (s.leaseEnd.IsZero() || req.Expiry.Before(s.leaseEnd)) {
		s.leaseEnd, s.expires = req.Expiry, true
	}
	s.progressSpan = max(uint64(h.cfg.Window)/4, 1)
	return s.run(ctx)
}

// stream is one subscriber's state. It is owned by the stream's goroutine.
type stream struct {
	h   *Hub
	req Request
	// sink may also be a Flusher, an EventSink and a Parker: asked when
	// used (a parked stream's memory is mostly this struct).
	sink  Sink
	match func(topic string) bool // nil: no filter

	// next is the next seq to read from the ring; every seq < next has been
	// delivered or skipped by the filter ("covered").
	next uint64
	// sent is the seq of the last positioned response sent.
	sent uint64
	// coveredAt and coveredFP (with the small fields, below) are the
	// commit time and fingerprint of seq next-1, for Progress (coveredFP
	// 0: that seq has none this stream knows, a hole or a position it did
	// not read).
	coveredAt time.Time
	// target is the position to cover before sending CaughtUp.
	target uint64
	// evictedKeys is what the latest-per-key table had evicted when a
	// LATEST_PER_KEY snapshot was taken (CaughtUp.snapshot_evicted_keys).
	evictedKeys uint64

	lastSend     time.Time
	leaseEnd     time.Time   // zero: no lease
	progressSpan uint64      // send Progress once this many seqs are covered unsent
	timer        *time.Timer // wait's, made at its first wait (a parked stream has none)
	batch        []*Event

	// A stream whose sink parks (park.go): parker is the sink, parked is
	// set while the stream waits without a goroutine, its clock on the
	// hub's clocks resumes it when its heartbeat or lease end is due
	// (timerArmed: it has not fired since it was last set, for timerDue;
	// clockIdx, guarded by the clocks' lock, places it there), and listed
	// is set while it is on the hub's parked list, at listIdx (both
	// guarded by Hub.parkMu).
	parker     Parker
	timerDue   time.Time
	parked     atomic.Bool
	timerArmed atomic.Bool
	listIdx    int32
	clockIdx   int32

	// The small fields together: a parked stream's memory is mostly this
	// struct, which they keep in a smaller size class.
	coveredFP uint32
	caughtUp  bool
	expires   bool // leaseEnd is the request's Expiry: end with ErrExpired
	listed    bool
}

// ended counts the stream out.
func (s *stream) ended() {
	s.h.streamEnded()
	s.h.cfg.Observer.StreamEnded(s.req.Face)
}

// A stream's steps return these to end it with OK status; run, the one
// exit, turns them into nil.
var (
	// errEnded: the stream ends here (bound reached, lease expired, hub
	// drained or closed); a pending Progress is sent first, so nothing
	// covered is left unreported.
	errEnded = errors.New("hub: stream ended")
	// errDrained: the hub drained and the stream delivered everything up
	// to its DRAINING status; ends as errEnded does, and with a Log then
	// sends this replica's DRAINING status.
	errDrained = errors.New("hub: stream ended by draining")
	// errResynced: a ResyncRequired was sent; it is terminal, nothing
	// follows it.
	errResynced = errors.New("hub: stream ended with ResyncRequired")
)

// run serves the stream and is its one exit: every end that is not an
// error goes through here, and an errEnded end flushes pending Progress.
func (s *stream) run(ctx context.Context) error {
	if s.expires && !time.Now().Before(s.leaseEnd) {
		// The credentials were refused from this instant on: nothing is
		// sent, not even a replay (Request.Expiry).
		return ErrExpired
	}
	err := s.start(ctx)
	if err == nil {
		err = s.loop(ctx)
	}
	if err == ErrParked {
		return err
	}
	return s.end(err)
}

// end turns the error a stream's steps ended it with into what Subscribe
// returns.
func (s *stream) end(err error) error {
	switch err {
	case errEnded, errDrained, ErrExpired:
		if perr := s.progressIf(true); perr != nil {
			return perr
		}
		if err == ErrExpired {
			return err
		}
		if err == errDrained {
			return s.replicaStatus() // with a Log: this replica's DRAINING
		}
		return nil
	case errResynced:
		return nil
	}
	return err
}

// start classifies the request and positions the stream: at the cursor
// (with the rest of a partly consumed commit), or after a snapshot, or —
// for an unservable cursor — with ResyncRequired (or a Gap and a snapshot).
func (s *stream) start(ctx context.Context) error {
	h, req := s.h, s.req
	c, err := h.classify(ctx, req)
	if err != nil {
		return err
	}
	h.cfg.Observer.Subscribed(req.Face, c.outcome)
	if c.outcome == OutcomeAhead || c.outcome == OutcomeCommitMismatch {
		h.logCursor(&req, c.outcome, c.head)
	}

	switch {
	case c.reason != ringcastv1.Reason_REASON_UNSPECIFIED:
		if req.OnUnservable != ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE {
			return s.resync(c.reason, req.SinceSeq, c.oldest, c.head)
		}
		gap := &ringcastv1.Gap{Reason: c.reason, RequestedSeq: req.SinceSeq, OldestSeq: c.oldest, HeadSeq: c.head}
		if err := s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_Gap{Gap: gap}}); err != nil {
			return err
		}
		return s.snapshot()
	case req.SinceSeq == 0 && !req.SinceTime.IsZero():
		// From a time: as a replay from the cursor just below c.at.
		if err := s.replicaStatus(); err != nil {
			return err
		}
		s.next, s.target, s.sent, s.coveredFP = c.at, max(c.head, c.at-1), c.at-1, 0
		return nil
	case req.SinceSeq == 0:
		return s.snapshot()
	}
	if err := s.replicaStatus(); err != nil {
		return err
	}
	s.next, s.target, s.sent = req.SinceSeq+1, c.head, req.SinceSeq
	s.coveredFP = req.SinceFingerprint // checked by classify, or none
	if c.partial != nil {
		return s.sendPartial(c.partial, req.SinceFact)
	}
	return nil
}

// snapshot positions the stream for the requested snapshot: RETAINED
// replays the ring from its oldest event; LATEST_PER_KEY sends the state
// table's current facts now and continues after head.
func (s *stream) snapshot() error {
	h := s.h
	if err := s.replicaStatus(); err != nil {
		return err
	}
	if s.req.Snapshot != ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY {
		h.mu.RLock()
		s.next, s.target = h.ring.oldest(), h.ring.head
		s.coveredAt = h.eventTimeLocked(s.next) // what a Progress before the first event says
		s.coveredFP = h.fingerprintLocked(s.next - 1)
		h.mu.RUnlock()
		return nil
	}
	keep := s.match
	if keep == nil {
		keep = func(string) bool { return true }
	}
	h.mu.RLock()
	facts := h.keys.collect(nil, keep)
	s.evictedKeys = h.keys.evicted
	status := h.latest // nil with a Log: replicaStatus sent it unpositioned
	head := h.ring.head
	headAt, headFP := h.eventTimeLocked(head), h.fingerprintLocked(head)
	h.mu.RUnlock()

	s.next, s.target, s.coveredAt, s.coveredFP = head+1, head, headAt, headFP
	if err := s.sendLatestPerKey(status, facts); err != nil {
		return err
	}
	return s.flush()
}

// sendLatestPerKey merges the latest status event (nil: none) into the
// latest facts (both in seq order) and sends them: the facts of one commit
// together as one commit response, the status at its own seq.
func (s *stream) sendLatestPerKey(status *Event, facts []snapshotFact) error {
	statusSent := status == nil
	for i := 0; i < len(facts) || !statusSent; {
		if !statusSent && (i == len(facts) || status.Seq < facts[i].seq) {
			if err := s.sendShared(status); err != nil {
				return err
			}
			s.sent, statusSent = status.Seq, true
			continue
		}
		j := i + 1
		for j < len(facts) && facts[j].seq == facts[i].seq {
			j++
		}
		group := make([]*ringcastv1.Fact, 0, j-i)
		for _, f := range facts[i:j] {
			group = append(group, f.fact)
		}
		first := facts[i]
		if err := s.sink.Send(commitResponse(s.h.epoch, first.seq, timestamppb.New(first.at), first.fp, group, first.factCount, "")); err != nil {
			return err
		}
		s.sent = first.seq
		i = j
	}
	return nil
}

// sendPartial sends the facts of commit ev with index >= from that match
// the filter: the rest of a commit the client stopped inside.
func (s *stream) sendPartial(ev *Event, from uint32) error {
	c := ev.Commit()
	var facts []*ringcastv1.Fact
	for _, f := range c.GetFacts()[from:] {
		if s.match == nil || s.match(f.GetTopic()) {
			facts = append(facts, f)
		}
	}
	if len(facts) == 0 {
		return nil
	}
	s.sent = ev.Seq
	return s.sendNow(commitResponse(s.h.epoch, ev.Seq, ev.resp.GetEventTime(), ev.Fingerprint(), facts, c.GetFactCount(), c.GetTraceparent()))
}

// loop replays from s.next and then tails live until the stream ends.
func (s *stream) loop(ctx context.Context) error {
	for {
		if err := s.checkCaughtUp(); err != nil {
			return err
		}
		batch, draining, wake, err := s.read(ctx)
		if err != nil {
			return err
		}
		switch {
		case len(batch) > 0:
			err = s.deliver(batch)
			clear(batch) // do not pin evicted events
		case wake == nil:
			continue // positions covered without events (a Log read past until_seq)
		case draining:
			return errDrained
		case s.mayPark(ctx) && s.parker.Park():
			return s.park(wake)
		default:
			err = s.wait(ctx, wake)
		}
		if err != nil {
			return err
		}
		if err := s.tick(time.Now()); err != nil {
			return err
		}
	}
}

// checkCaughtUp sends CaughtUp once the stream has covered its target, and
// ends the stream at a bound (end_at_head, until_seq).
func (s *stream) checkCaughtUp() error {
	covered, until := s.next-1, s.req.UntilSeq
	if !s.caughtUp && covered >= s.target && (until == 0 || covered < until) {
		if err := s.progressIf(true); err != nil {
			return err
		}
		cu := &ringcastv1.CaughtUp{HeadSeq: covered, HeartbeatInterval: durationpb.New(s.h.cfg.Heartbeat), SnapshotEvictedKeys: s.evictedKeys}
		if err := s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_CaughtUp{CaughtUp: cu}}); err != nil {
			return err
		}
		s.caughtUp = true
		if s.req.EndAtHead {
			return errEnded
		}
	}
	if until > 0 && covered >= until {
		return errEnded
	}
	return nil
}

// read copies the stream's next events out of the ring (at most maxBatch,
// and MaxBatchBytes of them unless the first alone is larger; none past
// until_seq), with the hub's state and the channel that closes
// when head next advances. A stream behind the ring reads on from the Log
// (wake nil); without one it gets ResyncRequired(SUBSCRIBER_LAGGING) — unless
// its filter would have skipped every event that left the ring
// (evictedTopics): then it reads on from the oldest retained event.
func (s *stream) read(ctx context.Context) (batch []*Event, draining bool, wake <-chan struct{}, err error) {
	h := s.h
	h.mu.RLock()
	oldest, head := h.ring.oldest(), h.ring.head
	if s.next < oldest {
		// Lapped: in memory, covered when the filter would have
		// skipped everything that left the ring.
		h.backend.lappedLocked(s, oldest)
	}
	if s.next < oldest {
		h.mu.RUnlock()
		batch, err = h.backend.behind(ctx, s, oldest, head)
		return batch, false, nil, err
	}
	draining = h.state != ringcastv1.ServerState_SERVER_STATE_SERVING
	if draining {
		head = h.backend.drainHeadLocked(head)
	}
	to := min(head, s.next+maxBatch-1)
	if s.req.UntilSeq > 0 {
		to = min(to, s.req.UntilSeq)
	}
	s.batch = s.batch[:0]
	if s.next <= to {
		s.batch = h.ring.appendRange(s.batch, s.next, to, MaxBatchBytes)
	}
	wake = h.takeWake()
	h.mu.RUnlock()
	return s.batch, draining, wake, nil
}

// deliver sends a batch of ring events, skipping (and covering) commits the
// filter leaves empty.
func (s *stream) deliver(batch []*Event) error {
	s.h.writing.Add(1)
	defer s.h.writing.Add(-1)
	var last *Event
	for _, ev := range batch {
		resp := s.filtered(ev)
		s.next, s.coveredAt, s.coveredFP = ev.Seq+1, ev.Time, ev.Fingerprint()
		if resp == nil {
			if err := s.progressIf(false); err != nil {
				return err
			}
			continue
		}
		var err error
		if resp == ev.resp {
			err = s.sendShared(ev)
		} else {
			err = s.sink.Send(resp)
		}
		if err != nil {
			return err
		}
		s.sent, last = ev.Seq, ev
	}
	if err := s.flush(); err != nil {
		return err
	}
	if last != nil {
		// Only a batch that wrote something resets the idle clock: a
		// stream whose filter skips everything still gets its Progress
		// (or heartbeat) once per heartbeat interval.
		s.lastSend = time.Now()
		s.h.cfg.Observer.Delivered(s.req.Face, s.caughtUp, s.lastSend.Sub(last.Time))
	}
	return nil
}

// sendShared sends ev's shared response, as the event itself when the sink
// takes events.
func (s *stream) sendShared(ev *Event) error {
	if es, ok := s.sink.(EventSink); ok {
		return es.SendEvent(ev)
	}
	return s.sink.Send(ev.resp)
}

// filtered is the response this stream sends for ev: the shared one when
// everything matches, a per-stream commit holding the matching facts, or
// nil when nothing matches. Status events always pass.
func (s *stream) filtered(ev *Event) *ringcastv1.SubscribeEventsResponse {
	c := ev.Commit()
	if s.match == nil || c == nil {
		return ev.resp
	}
	n := 0
	for _, f := range c.Facts {
		if s.match(f.Topic) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(c.Facts):
		return ev.resp
	}
	facts := make([]*ringcastv1.Fact, 0, n)
	for _, f := range c.Facts {
		if s.match(f.Topic) {
			facts = append(facts, f)
		}
	}
	return commitResponse(s.h.epoch, ev.Seq, ev.resp.EventTime, ev.Fingerprint(), facts, c.FactCount, c.Traceparent)
}

// wait blocks until the ring may have more for this stream (nil), or until
// the stream's next heartbeat or its lease end is due (nil: tick decides),
// or until the hub closes (errEnded) or ctx ends.
func (s *stream) wait(ctx context.Context, wake <-chan struct{}) error {
	d := s.untilDue()
	if d <= 0 {
		return nil
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	defer s.timer.Stop()
	select {
	case <-wake:
	case <-s.timer.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.h.done:
		return errEnded
	}
	return nil
}

// untilDue is how long until the stream's next heartbeat or its lease end
// is due.
func (s *stream) untilDue() time.Duration {
	return time.Until(s.due())
}

// due is when the stream's next heartbeat or its lease end is due.
func (s *stream) due() time.Time {
	due := s.lastSend.Add(s.h.cfg.Heartbeat)
	if !s.leaseEnd.IsZero() && s.leaseEnd.Before(due) {
		due = s.leaseEnd
	}
	return due
}

// tick is the stream's clock, run after every delivery and every wait: it
// ends the stream when its lease has expired, and on a stream silent for a
// heartbeat interval sends the pending Progress or else a Heartbeat.
func (s *stream) tick(now time.Time) error {
	if !s.leaseEnd.IsZero() && !now.Before(s.leaseEnd) {
		if s.expires {
			return ErrExpired
		}
		return errEnded
	}
	if now.Sub(s.lastSend) < s.h.cfg.Heartbeat {
		return nil
	}
	if s.progressDue(true) {
		return s.sendProgress()
	}
	return s.heartbeat()
}

// progressDue is the one rule for when coverage the client has not seen
// (commits the filter skipped since the last positioned response) is
// reported with a Progress: at once when now is set (the stream ends, it
// reaches CaughtUp, or it has been silent for a heartbeat interval), and
// otherwise once the unreported stretch spans progressSpan seqs.
func (s *stream) progressDue(now bool) bool {
	unsent := s.next - 1 - s.sent
	return unsent > 0 && (now || unsent >= s.progressSpan)
}

// progressIf sends a Progress when progressDue(now).
func (s *stream) progressIf(now bool) error {
	if !s.progressDue(now) {
		return nil
	}
	return s.sendProgress()
}

func (s *stream) sendProgress() error {
	seq := s.next - 1
	s.sent = seq
	return s.sendNow(&ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: s.h.epoch,
		EventTime:     timestamppb.New(s.coveredAt),
		Fingerprint:   s.coveredFP,
		Event:         &ringcastv1.SubscribeEventsResponse_Progress{Progress: &ringcastv1.Progress{}},
	})
}

func (s *stream) heartbeat() error {
	oldest, head := s.h.Bounds()
	hb := &ringcastv1.Heartbeat{HeadSeq: head, OldestSeq: oldest}
	return s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_Heartbeat{Heartbeat: hb}})
}

// resync sends the terminal ResyncRequired and returns errResynced (or the
// send's error).
func (s *stream) resync(reason ringcastv1.Reason, requested, oldest, head uint64) error {
	rr := &ringcastv1.ResyncRequired{Reason: reason, RequestedSeq: requested, OldestSeq: oldest, HeadSeq: head}
	if err := s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_ResyncRequired{ResyncRequired: rr}}); err != nil {
		return err
	}
	return errResynced
}

// control sends an unpositioned response (seq 0) stamped with the epoch and
// the send time.
func (s *stream) control(r *ringcastv1.SubscribeEventsResponse) error {
	r.InstanceEpoch = s.h.epoch
	r.EventTime = timestamppb.Now()
	return s.sendNow(r)
}

// sendNow sends r and flushes it.
func (s *stream) sendNow(r *ringcastv1.SubscribeEventsResponse) error {
	if err := s.sink.Send(r); err != nil {
		return err
	}
	s.lastSend = time.Now()
	return s.flush()
}

func (s *stream) flush() error {
	if f, ok := s.sink.(Flusher); ok {
		return f.Flush()
	}
	return nil
}

// aheadEvery is how often a cursor from the future is logged at most; the
// ones in between are counted in the next log line (a restored store sends
// every consumer's cursor at once).
const aheadEvery = 10 * time.Second

// logCursor logs a cursor from the future (ahead) or from another log. It
// is not inlined: its logging would enlarge the frame of every stream's
// start, on the stream's own small stack.
//
//go:noinline
func (h *Hub) logCursor(req *Request, outcome Outcome, head uint64) {
	if outcome == OutcomeAhead {
		h.ahead(req, head)
		return
	}
	h.cfg.Logger.Debug("a cursor from another log: its fingerprint is not the commit's at its seq; it resyncs",
		"face", req.Face, "seq", req.SinceSeq, "fingerprint", fingerprint.Format(req.SinceFingerprint))
}

// ahead logs a cursor of this epoch beyond head: evidence that the log
// was rolled back (a restored backup served under its old epoch), or a
// client that made its cursor up. The subscribes metric counts every one
// (outcome "ahead"); the log says so at most once per aheadEvery.
func (h *Hub) ahead(req *Request, head uint64) {
	now := time.Now().UnixNano()
	last := h.aheadWarned.Load()
	if now-last < int64(aheadEvery) || !h.aheadWarned.CompareAndSwap(last, now) {
		h.aheadQuiet.Add(1)
		return
	}
	h.cfg.Logger.Warn("a cursor from the future: its seq is beyond the log's head under the same epoch; was the store restored from an older copy? (restart with --store-recover after a restore: a new epoch, every consumer resyncs)",
		"face", req.Face, "epoch", epoch.Format(req.Epoch), "seq", req.SinceSeq, "head", head, "more_since_last_logged", h.aheadQuiet.Swap(0))
}
