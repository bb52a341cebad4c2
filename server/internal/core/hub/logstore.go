package hub

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
)

// receiptWait bounds how long a publish through a Log waits, after the
// Log acknowledged it, for this hub to receive the commit.
const receiptWait = 5 * time.Second

// startTimeout bounds how long New's rebuild from a Log waits for the
// Log's range, and then for each next commit: a rebuild that makes
// progress is not cut short, one that stalls fails.
const startTimeout = 2 * time.Minute

// rebuildProgress is how often a long rebuild logs how far it is.
const rebuildProgress = 5 * time.Second

// startLog takes the Log's epoch, rebuilds the ring and the latest-per-key
// table from the Log's newest commits, and follows the Log from there. It
// gives up when ctx ends (the process is told to stop while it starts).
func (h *Hub) startLog(ctx context.Context) error {
	h.epoch = h.log.Epoch()
	if w, ok := h.log.(DedupeLog); ok {
		// The Log deduplicates: ServerStatus reports its window.
		h.cfg.DedupeWindow = w.DedupeWindow()
	}
	if s, ok := h.log.(LimitsLog); ok {
		// The Log's retention: ServerStatus reports it.
		l := s.StoreLimits()
		h.store = &l
	}
	rctx, cancel := context.WithTimeout(ctx, startTimeout)
	first, last, err := h.log.Range(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("read the log's range: %w", err)
	}
	from := first
	if last >= first && last-first+1 > uint64(h.cfg.Rebuild) {
		from = last - uint64(h.cfg.Rebuild) + 1
	}
	h.ring = newRingAfter(h.cfg.Window, h.cfg.MaxRingBytes, from-1)
	h.heldHead.Store(from - 1)
	h.logFirst = first
	if el, ok := h.log.(EchoLog); ok {
		// The Log's own commits enter the ring from their acknowledgement.
		el.Echo(Intake{Take: h.take, Held: h.held, Head: h.heldUpTo})
	}
	h.notifierWG.Add(3)
	go h.notify()
	followCtx, stop := context.WithCancel(context.Background())
	h.stopFollow = stop
	go h.follow(followCtx, from)
	go h.refreshRange(followCtx)
	if err := h.rebuild(ctx, from, last); err != nil {
		h.Close()
		return fmt.Errorf("rebuild from the log up to seq %d: %w", last, err)
	}
	h.cfg.Logger.Info("log rebuilt", "epoch", epoch.Format(h.epoch), "first", first, "from", from, "head", last)
	return nil
}

// rebuild waits until the ring holds the commits from from to last, logging
// how far it is every rebuildProgress. It fails when ctx ends, when no
// commit comes for startTimeout, or when the hub fails (a damaged Log).
func (h *Hub) rebuild(ctx context.Context, from, last uint64) error {
	tick := time.NewTicker(rebuildProgress)
	defer tick.Stop()
	began := time.Now()
	seen, progressed := from-1, began
	for {
		h.mu.RLock()
		head, wake, read := h.ring.head, h.takeWake(), h.ingested
		h.mu.RUnlock()
		if head >= last {
			if secs := time.Since(began).Seconds(); secs > 0 && head >= from {
				h.cfg.Logger.Info("read the log", "commits", head-(from-1), "bytes", read,
					"elapsed", time.Since(began).Round(time.Millisecond), "mb_per_s", math.Round(float64(read)/1e6/secs*10)/10)
			}
			return nil
		}
		if head != seen {
			seen, progressed = head, time.Now()
		}
		select {
		case <-wake:
		case <-tick.C:
			if time.Since(progressed) >= startTimeout {
				return fmt.Errorf("no commit came from the log for %v after seq %d", startTimeout, head)
			}
			elapsed := time.Since(began)
			h.cfg.Logger.Info("rebuilding from the log", "read", head-(from-1), "of", last-(from-1),
				"seq", head, "last", last, "bytes", read, "elapsed", elapsed.Round(time.Millisecond),
				"mb_per_s", math.Round(float64(read)/1e6/elapsed.Seconds()*10)/10,
				"commits_per_s", math.Round(float64(head-(from-1))/elapsed.Seconds()))
		case <-ctx.Done():
			return fmt.Errorf("start-up stopped after %d of %d commits: %w", head-(from-1), last-(from-1), context.Cause(ctx))
		case err := <-h.failed:
			h.failed <- err // still reported on Failed
			return err
		case <-h.done:
			return ErrDraining
		}
	}
}

// follow feeds the ring from the Log until the hub closes, resuming after
// the ring's head whenever the Log's Follow fails.
func (h *Hub) follow(ctx context.Context, from uint64) {
	defer h.notifierWG.Done()
	const minRetry = 100 * time.Millisecond
	retry := minRetry
	for {
		began := time.Now()
		err := h.log.Follow(ctx, from, h.ingest)
		if ctx.Err() != nil {
			return
		}
		if logGone(err) {
			h.fail(err)
			return
		}
		if time.Since(began) > 10*time.Second {
			retry = minRetry // it had been following well: start over
		}
		h.cfg.Logger.Warn("following the log failed; retrying", "err", err, "after", retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, 5*time.Second)
		h.mu.RLock()
		from = h.ring.head + 1
		h.mu.RUnlock()
	}
}

// refreshRange keeps the servable range that heartbeats and ServerStatus
// report current as the Log's limits discard old commits, every second,
// and so notices within about a second that the Log was replaced.
func (h *Hub) refreshRange(ctx context.Context) {
	defer h.notifierWG.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _, err := h.logRange(rctx)
		cancel()
		if logGone(err) {
			h.fail(err)
			return
		}
	}
}

// logGone reports whether err says the Log may not be served under the
// hub's epoch any more: replaced or damaged.
func logGone(err error) bool {
	return errors.Is(err, ErrLogReplaced) || errors.Is(err, ErrLogDamaged)
}

// Failed reports, once, an error wrapping ErrLogReplaced or ErrLogDamaged:
// the hub's Log was replaced or damaged under it. The hub has then drained (its streams end with
// ServerStatus(DRAINING), publishes are refused) and follows the Log no
// more, so that nothing of the new log is served under the old epoch; the
// process should exit (non-zero) and be restarted, taking the new epoch.
// In memory it never reports.
func (h *Hub) Failed() <-chan error { return h.failed }

// fail drains the hub after its Log was replaced and reports it on Failed.
func (h *Hub) fail(err error) {
	h.failOnce.Do(func() {
		h.cfg.Logger.Error("the log was replaced or damaged under this replica: it drains and stops, so that nothing is served under its epoch; restart it to take the log's new epoch (a damaged log gets one only when its store is told to recover it)",
			"epoch", epoch.Format(h.epoch), "err", err)
		h.Drain()
		h.stopFollow()
		h.failed <- err
	})
}

// failIfReplaced fails the hub when a Log's append found the Log replaced
// or damaged, as Range and Follow do.
func (h *Hub) failIfReplaced(err error) {
	if logGone(err) {
		h.fail(err)
	}
}

// ingest puts a commit read from the Log into the ring and the state table.
func (h *Hub) ingest(ev *Event) {
	h.mu.Lock()
	if ev.Seq <= h.ring.head {
		h.mu.Unlock()
		return // already held (a Follow resumed before its position)
	}
	h.enterOwnLocked(ev.Seq) // own commits taken beyond holes before ev
	h.ring.skipTo(ev.Seq - 1)
	h.ingested += ev.size
	h.pushLocked(ev)
	h.mu.Unlock()
	h.signal()
}

// waitHead waits until the ring holds seq.
func (h *Hub) waitHead(ctx context.Context, seq uint64) error {
	for {
		h.mu.RLock()
		head, wake := h.ring.head, h.takeWake()
		h.mu.RUnlock()
		if head >= seq {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-h.done:
			return ErrDraining
		}
	}
}

// publishLog appends a commit to the Log. The receipt is the Log's; it is
// returned once this hub holds the commit, so a subscribe here with the
// receipt's seq as cursor resumes right after it. The Log alone
// deduplicates: the hub keeps no table of its own beside it, which could
// answer differently from the Log (a key published through another
// replica, or forgotten by this one).
func (h *Hub) publishLog(ctx context.Context, c Commit) (Receipt, error) {
	now := time.Now()
	h.mu.RLock()
	serving := h.state == ringcastv1.ServerState_SERVER_STATE_SERVING
	h.mu.RUnlock()
	if !serving {
		return Receipt{}, ErrDraining
	}
	r, err := h.log.Append(ctx, now, c)
	if err != nil {
		return Receipt{}, h.logError(err)
	}
	r.Epoch = h.epoch
	// The receipt stands whether or not this hub receives the commit in
	// time (its follower may be reconnecting): wait a bounded while.
	wctx, cancel := context.WithTimeout(ctx, receiptWait)
	_ = h.waitHead(wctx, r.Seq)
	cancel()
	if !r.Duplicate {
		h.cfg.Observer.Published(len(c.Facts), time.Since(now))
	}
	return r, nil
}

// logError is the error of a Log's append: a refusal of the request
// itself (ErrKeyReused, ErrBatchUnsupported, ErrCommitTooLarge) as it is,
// since retrying will not help; anything else, the Log's failure, wrapping
// ErrUnavailable.
func (h *Hub) logError(err error) error {
	if errors.Is(err, ErrKeyReused) || errors.Is(err, ErrBatchUnsupported) || errors.Is(err, ErrCommitTooLarge) {
		return err
	}
	h.failIfReplaced(err)
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// logRange asks the Log for its range and remembers its first seq for
// Bounds and ServerStatus.
func (h *Hub) logRange(ctx context.Context) (first, last uint64, err error) {
	first, last, err = h.log.Range(ctx)
	if err != nil {
		return 0, 0, err
	}
	h.mu.Lock()
	h.logFirst = first
	h.mu.Unlock()
	return first, last, nil
}

// eventAt returns the commit at seq from the ring or, older, from the Log;
// nil when there is none.
func (h *Hub) eventAt(ctx context.Context, seq uint64) (*Event, error) {
	h.mu.RLock()
	ev := h.ring.get(seq)
	h.mu.RUnlock()
	if ev != nil {
		return ev, nil
	}
	evs, err := h.log.Read(ctx, nil, seq, 1)
	if err != nil || len(evs) == 0 || evs[0].Seq != seq {
		return nil, err
	}
	return evs[0], nil
}

// logStore is a Log behind the ring (see Log): the Log numbers and
// deduplicates commits, the ring caches its newest, and statuses are per
// replica and unpositioned.
type logStore struct{ h *Hub }

func (l logStore) start(ctx context.Context) error { return l.h.startLog(ctx) }

func (l logStore) publishCommit(ctx context.Context, c Commit) (Receipt, error) {
	indexFacts(c.Facts)
	return l.h.publishLog(ctx, c)
}

func (l logStore) publishBatch(ctx context.Context, commits []Commit) ([]Receipt, error) {
	return l.h.publishBatchLog(ctx, commits)
}

// outcome asks the Log (OutcomeLog); a Log that cannot tell answers
// ErrOutcomeUnsupported.
func (l logStore) outcome(ctx context.Context, key Key) (PublishOutcome, error) {
	h := l.h
	ol, ok := h.log.(OutcomeLog)
	if !ok {
		return PublishOutcome{}, ErrOutcomeUnsupported
	}
	o, err := ol.Outcome(ctx, key)
	if err != nil {
		h.failIfReplaced(err)
		return PublishOutcome{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if o.Applied {
		o.Receipt.Epoch, o.Receipt.Duplicate = h.epoch, false
	}
	if now := time.Now(); o.RememberedSince.After(now) {
		o.RememberedSince = now // another clock's instant: never later than now
	}
	return o, nil
}

// boundsLocked: oldest is the Log's first seq (as last learnt, see
// refreshRange).
func (l logStore) boundsLocked() (oldest, head uint64) {
	return min(l.h.logFirst, l.h.ring.oldest()), l.h.ring.head
}

// drainLocked remembers the head: other replicas keep appending, and this
// one's streams end at the head it had when it started draining.
func (l logStore) drainLocked() { l.h.drainHead = l.h.ring.head }

func (l logStore) drainHeadLocked(head uint64) uint64 { return min(head, l.h.drainHead) }

func (l logStore) classify(ctx context.Context, req Request) (classification, error) {
	return l.h.classifyLog(ctx, req)
}

// seqAtTime searches the ring, and the Log's time index when the answer
// may lie before the ring.
func (l logStore) seqAtTime(ctx context.Context, t time.Time) (uint64, error) {
	h := l.h
	h.mu.RLock()
	seq, ok := h.ring.seqAtTime(t, false)
	h.mu.RUnlock()
	if ok {
		return seq, nil
	}
	seq, err := h.log.SeqAtTime(ctx, t)
	switch {
	case errors.Is(err, ErrTooOld):
		return 0, ErrTooOld
	case err != nil:
		h.failIfReplaced(err)
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return seq, nil
}

// refusedTimeRange names the Log's range, as for a cursor below it.
func (l logStore) refusedTimeRange(ctx context.Context, c *classification) error {
	first, last, err := l.h.logRange(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	c.oldest, c.head = first, max(c.head, last)
	return nil
}

// lappedLocked leaves the stream behind the ring: it reads on from the Log.
func (l logStore) lappedLocked(*stream, uint64) {}

func (l logStore) behind(ctx context.Context, s *stream, _, _ uint64) ([]*Event, error) {
	return s.readLog(ctx)
}

// replicaStatus sends this replica's ServerStatus unpositioned (seq 0).
func (l logStore) replicaStatus(s *stream) error {
	h := l.h
	h.mu.RLock()
	st := h.statusLocked()
	h.mu.RUnlock()
	return s.control(&ringcastv1.SubscribeEventsResponse{Event: &ringcastv1.SubscribeEventsResponse_ServerStatus{ServerStatus: st}})
}
