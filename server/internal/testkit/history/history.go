// Package history records what publishers were told and what consumers
// were given while faults are injected, and checks the record against the
// stream contract (docs/protocol.md):
//
//   - per epoch, between resync boundaries, a consumer is given every
//     published fact exactly once, in (seq, index) order — across its own
//     restarts from a persisted cursor too;
//   - every resync is explained: its reason fits what happened (a new
//     epoch, a cursor that left the window, a log that a restore replaced
//     under its epoch — which a test records as another epoch, since its
//     seqs name other commits) and its requested_seq is the
//     position the consumer had reached, never past a fact it was not
//     given; after it, the consumer starts again at the first commit at or
//     after the resync's oldest_seq (a retained snapshot) — or, when the
//     server restarted again before that snapshot gave anything, at the
//     start of the newer epoch (the snapshot is the newer server's).
//
// Consumers subscribe without a topic filter and with retained snapshots,
// and a fresh consumer starts at the beginning of its epoch: tests keep the
// window larger than what they publish. A failure names the consumer and
// prints a short excerpt of its history around the first violation.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// History is one test's record. Its methods are safe for concurrent use.
type History struct {
	mu        sync.Mutex
	receipts  map[uint64][]receipt // by epoch
	consumers []*Consumer
}

type receipt struct {
	seq   uint64
	facts int
}

// New returns an empty history.
func New() *History { return &History{receipts: map[uint64][]receipt{}} }

// Published records a publish receipt: commit seq of epoch holds facts facts.
func (h *History) Published(epoch, seq uint64, facts int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.receipts[epoch] = append(h.receipts[epoch], receipt{seq, facts})
}

// Consumer starts the record of a consumer named name.
func (h *History) Consumer(name string) *Consumer {
	c := &Consumer{name: name}
	h.mu.Lock()
	h.consumers = append(h.consumers, c)
	h.mu.Unlock()
	return c
}

// Consumer is one consumer's record.
type Consumer struct {
	name   string
	mu     sync.Mutex
	events []event
}

type kind uint8

const (
	kindFact kind = iota
	kindResync
	kindRestart
)

type event struct {
	kind                    kind
	epoch, seq              uint64
	index                   uint32
	reason                  string
	requested, oldest, head uint64
}

func (e event) String() string {
	switch e.kind {
	case kindFact:
		return fmt.Sprintf("fact    epoch %016x  %d/%d", e.epoch, e.seq, e.index)
	case kindResync:
		return fmt.Sprintf("resync  epoch %016x  %s requested=%d oldest=%d head=%d", e.epoch, e.reason, e.requested, e.oldest, e.head)
	}
	return "restart from the persisted cursor"
}

func (c *Consumer) add(e event) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
}

// Fact records that the consumer was given fact index of commit seq.
func (c *Consumer) Fact(epoch, seq uint64, index uint32) {
	c.add(event{kind: kindFact, epoch: epoch, seq: seq, index: index})
}

// Resynced records a resync signal (ResyncRequired, or an inline Gap):
// epoch is the epoch the consumer continues in; reason is the Reason's
// name (e.g. "REASON_EPOCH_MISMATCH").
func (c *Consumer) Resynced(epoch uint64, reason string, requested, oldest, head uint64) {
	c.add(event{kind: kindResync, epoch: epoch, reason: reason, requested: requested, oldest: oldest, head: head})
}

// Restarted records that the consumer stopped and started again from its
// persisted cursor: nothing changes for the checker, which is the point.
func (c *Consumer) Restarted() { c.add(event{kind: kindRestart}) }

// Summary is what a check covered.
type Summary struct {
	Consumers, Facts, Resyncs, Restarts, Commits int
}

func (s Summary) String() string {
	return fmt.Sprintf("%d commits published; %d consumers given %d facts checked, %d resyncs explained, %d restarts; 0 lost, 0 duplicated",
		s.Commits, s.Consumers, s.Facts, s.Resyncs, s.Restarts)
}

// Check verifies every consumer's record against the receipts. Call it
// once publishers and consumers have stopped. With complete, every
// consumer must also have been given every fact of the epoch it ended in.
func (h *History) Check(complete bool) (Summary, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var sum Summary
	for e, rs := range h.receipts {
		slices.SortFunc(rs, func(a, b receipt) int { return cmp.Compare(a.seq, b.seq) })
		h.receipts[e] = rs
		sum.Commits += len(rs)
	}
	var errs []string
	for _, c := range h.consumers {
		c.mu.Lock()
		events := slices.Clone(c.events)
		c.mu.Unlock()
		sum.Consumers++
		if err := h.checkConsumer(events, complete, &sum); err != nil {
			errs = append(errs, fmt.Sprintf("consumer %s: %s", c.name, err))
		}
	}
	if len(errs) > 0 {
		return sum, fmt.Errorf("history check failed:\n%s", strings.Join(errs, "\n"))
	}
	return sum, nil
}

// cursor walks one epoch's receipts fact by fact.
type cursor struct {
	rs []receipt
	r  int    // receipt index of the next expected fact; len(rs): none yet
	i  uint32 // its index
}

func (p cursor) done() bool { return p.r >= len(p.rs) }

func (p cursor) String() string {
	if p.done() {
		return "nothing (every published fact delivered)"
	}
	return fmt.Sprintf("%d/%d", p.rs[p.r].seq, p.i)
}

func (p *cursor) advance() {
	if p.i++; int(p.i) >= p.rs[p.r].facts {
		p.r, p.i = p.r+1, 0
	}
}

// at positions p at the first commit with seq >= seq.
func (p *cursor) at(seq uint64) {
	p.r, _ = slices.BinarySearchFunc(p.rs, seq, func(r receipt, s uint64) int { return cmp.Compare(r.seq, s) })
	p.i = 0
}

func (h *History) checkConsumer(events []event, complete bool, sum *Summary) error {
	var (
		epoch      uint64 // 0: not yet known
		pos        cursor
		pending    = true // the next fact must be a segment's first
		boundary   = uint64(1)
		lastGiven  uint64 // seq of the last fact given in epoch
		lastEpochs = map[uint64]bool{}
	)
	fail := func(at int, format string, args ...any) error {
		var b strings.Builder
		fmt.Fprintf(&b, "event #%d: %s", at, fmt.Sprintf(format, args...))
		for i := max(at-5, 0); i <= min(at+2, len(events)-1); i++ {
			mark := "  "
			if i == at {
				mark = "> "
			}
			fmt.Fprintf(&b, "\n    %s#%-5d %v", mark, i, events[i])
		}
		if epoch != 0 && !pos.done() {
			lo, hi := max(pos.r-2, 0), min(pos.r+3, len(pos.rs))
			var rs []string
			for _, r := range pos.rs[lo:hi] {
				rs = append(rs, fmt.Sprintf("%d(%d facts)", r.seq, r.facts))
			}
			fmt.Fprintf(&b, "\n    published near the expected position: %s", strings.Join(rs, " "))
		}
		return fmt.Errorf("%s", b.String())
	}
	for n, e := range events {
		switch e.kind {
		case kindRestart:
			sum.Restarts++
		case kindResync:
			sum.Resyncs++
			if epoch != 0 {
				// The requested position must be what the consumer reached:
				// not before a fact it was given, not past one it was not.
				if e.requested < lastGiven {
					return fail(n, "%s requested_seq %d, before %d which the consumer was already given", e.reason, e.requested, lastGiven)
				}
				// (A consumer inside a commit asks for that commit's seq.)
				if next := pos; !next.done() && (next.rs[next.r].seq < e.requested || next.rs[next.r].seq == e.requested && next.i == 0) {
					return fail(n, "%s requested_seq %d, past %v which the consumer was never given", e.reason, e.requested, pos)
				}
			}
			switch e.reason {
			case "REASON_EPOCH_MISMATCH":
				if e.epoch == epoch {
					return fail(n, "EPOCH_MISMATCH without a new epoch")
				}
			case "REASON_CURSOR_AHEAD", "REASON_COMMIT_MISMATCH":
				// The log the cursor came from was replaced under its
				// epoch (a restore): the test records the log that
				// replaced it as another epoch, and only a move to it
				// explains these.
				if epoch != 0 && e.epoch == epoch {
					return fail(n, "%s without another log", e.reason)
				}
			case "REASON_CURSOR_TOO_OLD", "REASON_SUBSCRIBER_LAGGING":
				if epoch != 0 && e.epoch != epoch {
					return fail(n, "%s across epochs (%016x → %016x)", e.reason, epoch, e.epoch)
				}
				if e.requested+1 >= e.oldest {
					return fail(n, "%s although position %d+1 was still retained (oldest %d)", e.reason, e.requested, e.oldest)
				}
			default:
				return fail(n, "unexpected resync reason %s", e.reason)
			}
			if lastEpochs[e.epoch] && e.epoch != epoch {
				return fail(n, "resync back into epoch %016x, which the consumer had left", e.epoch)
			}
			if epoch != 0 {
				lastEpochs[epoch] = true
			}
			epoch, pending, boundary, lastGiven = e.epoch, true, e.oldest, 0
			pos = cursor{rs: h.receipts[epoch]}
		case kindFact:
			sum.Facts++
			if epoch == 0 {
				epoch = e.epoch
				pos = cursor{rs: h.receipts[epoch]}
			}
			if e.epoch != epoch && pending && !lastEpochs[e.epoch] {
				// The server restarted again before the snapshot that
				// follows the resync gave anything: that snapshot comes
				// from the newer epoch, from its start.
				lastEpochs[epoch] = true
				epoch, boundary = e.epoch, 1
				pos = cursor{rs: h.receipts[epoch]}
			}
			if e.epoch != epoch {
				return fail(n, "a fact of epoch %016x while in epoch %016x, without a resync", e.epoch, epoch)
			}
			if pending {
				pos.at(boundary)
				pending = false
			}
			switch {
			case pos.done():
				return fail(n, "fact %d/%d after every published fact of the epoch was given (repeated, or never published)", e.seq, e.index)
			case e.seq == pos.rs[pos.r].seq && e.index == pos.i:
			case e.seq < pos.rs[pos.r].seq || (e.seq == pos.rs[pos.r].seq && e.index < pos.i):
				return fail(n, "fact %d/%d repeated or out of order: expected %v next", e.seq, e.index, pos)
			default:
				return fail(n, "facts missing: expected %v, given %d/%d", pos, e.seq, e.index)
			}
			lastGiven = e.seq
			pos.advance()
		}
	}
	if complete && (epoch == 0 || pending || !pos.done()) {
		if len(events) == 0 {
			return fmt.Errorf("given nothing")
		}
		return fail(len(events)-1, "ended before it was given every fact of its epoch: next expected %v", pos)
	}
	return nil
}
