package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// maxBatch bounds how many events a stream copies out of the ring per lock.
const maxBatch = 128

// Request is a subscribe, independent of the face it arrived on.
type Request struct {
	Face         string // "connect" or "sse": for metrics only
	SinceSeq     uint64
	Epoch        uint64
	SinceFact    uint32
	Topics       []string
	Snapshot     ringcastv1.Snapshot
	OnUnservable ringcastv1.OnUnservable
	UntilSeq     uint64
	EndAtHead    bool
}

// RequestFromProto converts a validated SubscribeEventsRequest.
func RequestFromProto(face string, m *ringcastv1.SubscribeEventsRequest) Request {
	return Request{
		Face:         face,
		SinceSeq:     m.GetSinceSeq(),
		Epoch:        m.GetInstanceEpoch(),
		SinceFact:    m.GetSinceFact(),
		Topics:       m.GetTopics(),
		Snapshot:     m.GetSnapshot(),
		OnUnservable: m.GetOnUnservable(),
		UntilSeq:     m.GetUntilSeq(),
		EndAtHead:    m.GetEndAtHead(),
	}
}

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
// shared response (its cached encodings, see Event.Encoded): Subscribe calls
// SendEvent(ev) instead of Send(ev.Response()) whenever it sends an event's
// shared response unchanged.
type EventSink interface {
	Sink
	SendEvent(*Event) error
}

// SinkFunc adapts a function (such as connect.ServerStream.Send) to Sink.
type SinkFunc func(*ringcastv1.SubscribeEventsResponse) error

// Send calls f.
func (f SinkFunc) Send(r *ringcastv1.SubscribeEventsResponse) error { return f(r) }

// Subscribe serves one stream on the calling goroutine until it ends:
//
//   - nil when the stream ended as the contract says it ends with OK status
//     (ResyncRequired sent, bound reached, lease expired, hub drained);
//   - ctx.Err() when ctx was cancelled (the client went away);
//   - the sink's error when a send failed.
//
// Every positioned response it sends has a seq strictly greater than the
// previous positioned one, and no event between the start position and the
// end is skipped without a Progress covering it.
func (h *Hub) Subscribe(ctx context.Context, req Request, sink Sink) error {
	h.subscribers.Add(1)
	h.cfg.Observer.StreamStarted(req.Face)
	defer func() {
		h.subscribers.Add(-1)
		h.cfg.Observer.StreamEnded(req.Face)
	}()
	s := &stream{h: h, req: req, sink: sink, lastSend: time.Now()}
	s.flusher, _ = sink.(Flusher)
	s.eventSink, _ = sink.(EventSink)
	if len(req.Topics) > 0 {
		s.match = topicMatcher(req.Topics)
	}
	if h.cfg.Lease > 0 {
		j := 1 + h.cfg.LeaseJitter*(2*rand.Float64()-1)
		s.leaseEnd = s.lastSend.Add(time.Duration(float64(h.cfg.Lease) * j))
	}
	s.progressSpan = max(uint64(h.cfg.Window)/4, 1)
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	defer s.timer.Stop()
	return s.run(ctx)
}

// stream is one subscriber's state. It is owned by the stream's goroutine.
type stream struct {
	h       *Hub
	req     Request
	sink    Sink
	flusher Flusher
	// eventSink is sink when it takes shared events whole; else nil.
	eventSink EventSink
	match     func(topic string) bool // nil: no filter

	// next is the next seq to read from the ring; every seq < next has been
	// delivered or skipped by the filter ("covered").
	next uint64
	// sent is the seq of the last positioned response sent.
	sent uint64
	// coveredAt is the commit time of seq next-1, for Progress.
	coveredAt time.Time
	// target is the position to cover before sending CaughtUp.
	target   uint64
	caughtUp bool

	lastSend     time.Time
	leaseEnd     time.Time // zero: no lease
	progressSpan uint64    // send Progress once this many seqs are covered unsent
	timer        *time.Timer
	batch        []*Event
}

func (s *stream) run(ctx context.Context) error {
	h, req := s.h, s.req
	c, err := h.classify(ctx, req)
	if err != nil {
		return err
	}
	oldest, head, reason := c.oldest, c.head, c.reason
	h.cfg.Observer.Subscribed(req.Face, c.outcome)

	switch {
	case reason != ringcastv1.Reason_REASON_UNSPECIFIED:
		if req.OnUnservable != ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE {
			return s.resync(reason, req.SinceSeq, oldest, head)
		}
		gap := &ringcastv1.Gap{Reason: reason, RequestedSeq: req.SinceSeq, OldestSeq: oldest, HeadSeq: head}
		if err := s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_Gap{Gap: gap}}); err != nil {
			return err
		}
		if err := s.snapshot(); err != nil {
			return err
		}
	case req.SinceSeq == 0:
		if err := s.snapshot(); err != nil {
			return err
		}
	default:
		if err := s.replicaStatus(); err != nil {
			return err
		}
		s.next, s.target, s.sent = req.SinceSeq+1, head, req.SinceSeq
		if c.partial != nil {
			if err := s.sendPartial(c.partial, req.SinceFact); err != nil {
				return err
			}
		}
	}
	return s.loop(ctx)
}

// classification is a subscribe's start: the reason it cannot be served
// (REASON_UNSPECIFIED when it can), the range the decision saw and, for a
// resume inside a commit, that commit.
type classification struct {
	reason       ringcastv1.Reason
	outcome      Outcome
	oldest, head uint64
	partial      *Event
}

// classify decides a subscribe's start against the ring or, for a cursor
// outside the ring, against the Log's range.
func (h *Hub) classify(ctx context.Context, req Request) (classification, error) {
	var c classification
	h.mu.RLock()
	c.oldest, c.head = h.boundsLocked()
	if h.log == nil {
		c.reason, c.outcome = classify(req, h.epoch, c.oldest, c.head, h.ring.get)
		if c.reason == ringcastv1.Reason_REASON_UNSPECIFIED && req.SinceFact > 0 {
			c.partial = h.ring.get(req.SinceSeq)
		}
		h.mu.RUnlock()
		return c, nil
	}
	ringOldest := h.ring.oldest()
	h.mu.RUnlock()
	if req.SinceSeq > 0 && req.Epoch == h.epoch && (req.SinceSeq+1 < ringOldest || req.SinceSeq > c.head) {
		first, last, err := h.logRange(ctx)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		c.oldest, c.head = first, max(c.head, last)
	}
	if req.SinceSeq > 0 && req.SinceFact > 0 && req.Epoch == h.epoch && req.SinceSeq <= c.head && req.SinceSeq >= c.oldest {
		ev, err := h.eventAt(ctx, req.SinceSeq)
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		c.partial = ev
	}
	at := func(uint64) *Event { return c.partial }
	c.reason, c.outcome = classify(req, h.epoch, c.oldest, c.head, at)
	if c.reason != ringcastv1.Reason_REASON_UNSPECIFIED || req.SinceFact == 0 {
		c.partial = nil
	}
	return c, nil
}

// classify applies the subscribe table of the contract (§3) to a request
// against the servable range [oldest, head]; at returns the commit at a seq
// in that range. It returns REASON_UNSPECIFIED when the request is servable.
func classify(req Request, epoch, oldest, head uint64, at func(uint64) *Event) (ringcastv1.Reason, Outcome) {
	switch {
	case req.SinceSeq == 0:
		return ringcastv1.Reason_REASON_UNSPECIFIED, OutcomeNew
	case req.Epoch != epoch:
		return ringcastv1.Reason_REASON_EPOCH_MISMATCH, OutcomeEpochMismatch
	case req.SinceSeq > head:
		return ringcastv1.Reason_REASON_CURSOR_AHEAD, OutcomeAhead
	case req.SinceSeq+1 < oldest:
		return ringcastv1.Reason_REASON_CURSOR_TOO_OLD, OutcomeTooOld
	case req.SinceFact > 0:
		ev := at(req.SinceSeq)
		if req.SinceSeq < oldest || ev == nil || req.SinceFact >= ev.Commit().GetFactCount() {
			return ringcastv1.Reason_REASON_FACT_OUT_OF_RANGE, OutcomeFactOutOfRange
		}
	}
	return ringcastv1.Reason_REASON_UNSPECIFIED, OutcomeResumed
}

// replicaStatus sends, with a Log, this replica's ServerStatus unpositioned
// (seq 0) at the start of a stream; in memory statuses are in the ring.
func (s *stream) replicaStatus() error {
	h := s.h
	if h.log == nil {
		return nil
	}
	h.mu.RLock()
	st := h.statusLocked()
	h.mu.RUnlock()
	return s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_ServerStatus{ServerStatus: st}})
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
		h.mu.RUnlock()
		return nil
	}
	keep := s.match
	if keep == nil {
		keep = func(string) bool { return true }
	}
	h.mu.RLock()
	facts := h.keys.collect(nil, keep)
	status := h.latest // nil with a Log: replicaStatus sent it unpositioned
	head := h.ring.head
	headAt := h.eventTimeLocked(head)
	h.mu.RUnlock()

	s.next, s.target, s.coveredAt = head+1, head, headAt
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
		if err := s.sink.Send(commitResponse(h.epoch, first.seq, timestamppb.New(first.at), group, first.factCount)); err != nil {
			return err
		}
		s.sent = first.seq
		i = j
	}
	return s.flush()
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
	return s.sendNow(commitResponse(s.h.epoch, ev.Seq, ev.resp.GetEventTime(), facts, c.GetFactCount()))
}

// loop replays from s.next and then tails live until the stream ends.
func (s *stream) loop(ctx context.Context) error {
	h := s.h
	for {
		covered := s.next - 1
		if !s.caughtUp && covered >= s.target && (s.req.UntilSeq == 0 || covered < s.req.UntilSeq) {
			if err := s.flushProgress(); err != nil {
				return err
			}
			cu := &ringcastv1.CaughtUp{HeadSeq: covered, HeartbeatInterval: durationpb.New(s.h.cfg.Heartbeat)}
			if err := s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_CaughtUp{CaughtUp: cu}}); err != nil {
				return err
			}
			s.caughtUp = true
			if s.req.EndAtHead {
				return nil
			}
		}
		if s.req.UntilSeq > 0 && covered >= s.req.UntilSeq {
			return s.flushProgress()
		}

		h.mu.RLock()
		oldest, head := h.ring.oldest(), h.ring.head
		if s.next < oldest {
			h.mu.RUnlock()
			if h.log != nil {
				// Behind the ring: read on from the Log.
				if err := s.replayLog(ctx); err != nil {
					return err
				}
				continue
			}
			h.cfg.Observer.Lagged(s.req.Face)
			return s.resync(ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING, s.next-1, oldest, head)
		}
		draining := h.state != ringcastv1.ServerState_SERVER_STATE_SERVING
		if draining && h.log != nil {
			// Other replicas keep appending: this one's streams end
			// at the head it had when it started draining.
			head = min(head, h.drainHead)
		}
		to := min(head, s.next+maxBatch-1)
		if s.req.UntilSeq > 0 {
			to = min(to, s.req.UntilSeq)
		}
		if s.next <= to {
			s.batch = h.ring.appendRange(s.batch[:0], s.next, to)
		} else {
			s.batch = s.batch[:0]
		}
		wake := h.wake
		h.mu.RUnlock()

		if len(s.batch) == 0 {
			if draining {
				if err := s.flushProgress(); err != nil {
					return err
				}
				return s.replicaStatus() // with a Log: this replica's DRAINING
			}
			if end, err := s.wait(ctx, wake); end || err != nil {
				return err
			}
			continue
		}
		if err := s.deliver(s.batch); err != nil {
			return err
		}
		clear(s.batch) // do not pin evicted events
		now := time.Now()
		if !s.leaseEnd.IsZero() && now.After(s.leaseEnd) {
			return s.flushProgress()
		}
		if now.Sub(s.lastSend) >= s.h.cfg.Heartbeat && s.next-1 > s.sent {
			// Busy skipping filtered commits: report the coverage now,
			// as wait would on an idle stream.
			if err := s.sendProgress(); err != nil {
				return err
			}
		}
	}
}

// deliver sends a batch of ring events, skipping (and covering) commits the
// filter leaves empty.
func (s *stream) deliver(batch []*Event) error {
	var last *Event
	for _, ev := range batch {
		resp := s.filtered(ev)
		s.next, s.coveredAt = ev.Seq+1, ev.Time
		if resp == nil {
			if ev.Seq-s.sent >= s.progressSpan {
				if err := s.sendProgress(); err != nil {
					return err
				}
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
		s.h.cfg.Observer.Delivered(s.req.Face, s.lastSend.Sub(last.Time))
	}
	return nil
}

// sendShared sends ev's shared response, as the event itself when the sink
// takes events.
func (s *stream) sendShared(ev *Event) error {
	if s.eventSink != nil {
		return s.eventSink.SendEvent(ev)
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
	return commitResponse(s.h.epoch, ev.Seq, ev.resp.EventTime, facts, c.FactCount)
}

// wait blocks until the ring may have more for this stream, and meanwhile
// sends heartbeats (or pending Progress) on idle. It reports end = true when
// the stream must end with OK status (lease expired, hub closed).
func (s *stream) wait(ctx context.Context, wake <-chan struct{}) (end bool, err error) {
	for {
		due := s.lastSend.Add(s.h.cfg.Heartbeat)
		if !s.leaseEnd.IsZero() && s.leaseEnd.Before(due) {
			due = s.leaseEnd
		}
		if d := time.Until(due); d > 0 {
			s.timer.Reset(d)
			select {
			case <-wake:
				s.timer.Stop()
				return false, nil
			case <-ctx.Done():
				return true, ctx.Err()
			case <-s.h.done:
				return true, s.flushProgress()
			case <-s.timer.C:
			}
		}
		now := time.Now()
		if !s.leaseEnd.IsZero() && !now.Before(s.leaseEnd) {
			return true, s.flushProgress()
		}
		if now.Sub(s.lastSend) < s.h.cfg.Heartbeat {
			continue
		}
		if s.next-1 > s.sent {
			err = s.sendProgress()
		} else {
			err = s.heartbeat()
		}
		if err != nil {
			return true, err
		}
	}
}

// flushProgress sends a Progress if coverage is ahead of the last
// positioned response, so the client's cursor reaches what was covered.
func (s *stream) flushProgress() error {
	if s.next-1 > s.sent {
		return s.sendProgress()
	}
	return nil
}

func (s *stream) sendProgress() error {
	seq := s.next - 1
	s.sent = seq
	return s.sendNow(&ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: s.h.epoch,
		EventTime:     timestamppb.New(s.coveredAt),
		Event:         &ringcastv1.SubscribeEventsResponse_Progress{Progress: &ringcastv1.Progress{}},
	})
}

func (s *stream) heartbeat() error {
	oldest, head := s.h.Bounds()
	hb := &ringcastv1.Heartbeat{HeadSeq: head, OldestSeq: oldest}
	return s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_Heartbeat{Heartbeat: hb}})
}

// resync sends the terminal ResyncRequired; the stream then ends OK.
func (s *stream) resync(reason ringcastv1.Reason, requested, oldest, head uint64) error {
	rr := &ringcastv1.ResyncRequired{Reason: reason, RequestedSeq: requested, OldestSeq: oldest, HeadSeq: head}
	return s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_ResyncRequired{ResyncRequired: rr}})
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
	if s.flusher == nil {
		return nil
	}
	return s.flusher.Flush()
}

// topicMatcher returns a matcher for a topics filter: an entry matches a
// topic equal to it or a prefix of it ending at a "/" boundary.
func topicMatcher(topics []string) func(string) bool {
	return func(topic string) bool {
		for _, t := range topics {
			if MatchTopic(t, topic) {
				return true
			}
		}
		return false
	}
}

// MatchTopic reports whether filter entry f matches topic.
func MatchTopic(f, topic string) bool {
	return topic == f || (len(topic) > len(f) && topic[len(f)] == '/' && strings.HasPrefix(topic, f))
}

// replayLog delivers the next batch of commits from the Log for a stream
// behind the ring. A position the Log no longer holds ends the stream with
// ResyncRequired(SUBSCRIBER_LAGGING), as the ring would.
func (s *stream) replayLog(ctx context.Context) error {
	h := s.h
	batch, err := h.log.Read(ctx, s.batch[:0], s.next, maxBatch)
	if errors.Is(err, ErrTooOld) || (err == nil && len(batch) == 0) {
		oldest, head := h.Bounds()
		h.cfg.Observer.Lagged(s.req.Face)
		return s.resync(ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING, s.next-1, oldest, head)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if u := s.req.UntilSeq; u > 0 {
		n := 0
		for n < len(batch) && batch[n].Seq <= u {
			n++
		}
		batch = batch[:n]
		if n == 0 {
			s.next = u + 1 // nothing the Log holds up to u: covered
			return nil
		}
	}
	s.batch = batch
	if err := s.deliver(batch); err != nil {
		return err
	}
	clear(s.batch)
	return nil
}

// eventTimeLocked is the time of the event at seq, or the boot time when
// the ring does not hold it (an empty ring).
func (h *Hub) eventTimeLocked(seq uint64) time.Time {
	if ev := h.ring.get(seq); ev != nil {
		return ev.Time
	}
	return h.boot
}
