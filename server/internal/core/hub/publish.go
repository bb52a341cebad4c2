package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Commit is one commit to publish (PublishCommit, PublishBatch): its facts,
// an optional idempotency key in its publisher's key space (see Key) and an
// optional traceparent.
type Commit struct {
	Facts          []*ringcastv1.Fact
	IdempotencyKey string
	// Publisher is the key space of IdempotencyKey, "" for the one shared
	// space. With an Admitter, the hub sets it to the caller's
	// (Admitter.Publisher) whatever it was.
	Publisher string
	// Traceparent is the W3C trace context of the publish, kept on the
	// commit for consumers, on every store (empty: none).
	Traceparent string
}

// Publish appends one commit holding facts and returns its receipt: it is
// PublishCommit without a caller, an idempotency key's client or a
// traceparent.
func (h *Hub) Publish(facts []*ringcastv1.Fact, idempotencyKey string) (Receipt, error) {
	return h.PublishCommit(context.Background(), Commit{Facts: facts, IdempotencyKey: idempotencyKey})
}

// PublishCommit appends one commit and returns its receipt, once the
// Admitter (Config.Admit) has admitted it for the caller ctx belongs to:
// a commit it refuses is answered with its refusal, and a key is the
// caller's (Commit.Publisher, Admitter.Publisher). The hub takes
// ownership of its facts (it sets each Index) and never modifies them
// afterwards; the caller must not use them again. Facts are validated at the
// RPC edge; PublishCommit itself refuses, with an error wrapping
// ErrInvalidFact, facts that could not be delivered to every subscriber (see
// checkFacts). An idempotency key its publisher used within the dedupe
// window returns the original receipt with Duplicate set and appends
// nothing when the facts are the same, and is refused with ErrKeyReused
// when they are not; a new one while
// the dedupe table, or the publishing client's share of it
// (Admitter.Client), is full of live keys is refused with a
// *DedupeFullError (ErrDedupeFull). With a Log, the Log deduplicates (its
// window, across replicas and restarts) and the hub keeps no dedupe table:
// no ErrDedupeFull, and a draining hub refuses repeats too (ErrDraining)
// since only the Log knows them.
//
// ctx bounds the wait for a Log's acknowledgement: with a Log the receipt
// is returned once the Log has acknowledged the commit (and this hub holds
// it, unless ctx ends first); a Log that fails yields an error wrapping
// ErrUnavailable.
func (h *Hub) PublishCommit(ctx context.Context, c Commit) (Receipt, error) {
	commits := [1]Commit{c}
	ctx, err := h.admitPublish(ctx, commits[:], false)
	if err != nil {
		return Receipt{}, err
	}
	c = commits[0]
	if err := checkFacts(-1, c.Facts, h.cfg.MaxFactBytes, h.cfg.MaxDataDepth); err != nil {
		return Receipt{}, err
	}
	return h.backend.publishCommit(ctx, c)
}

// ErrBatchUnsupported is returned by PublishBatch for a batch of more than
// one commit when the hub's Log cannot append a batch atomically (it does
// not implement BatchLog).
var ErrBatchUnsupported = errors.New("hub: this store cannot append several commits atomically; publish them one by one")

// BatchLog is a Log that can append several commits at once: all of them,
// with consecutive seqs in order, or none. AppendBatch returns one receipt
// per commit (Epoch left zero); a commit whose key the log has seen gets the
// original receipt with Duplicate set and is not appended.
type BatchLog interface {
	Log
	AppendBatch(ctx context.Context, at time.Time, commits []Commit) ([]Receipt, error)
}

// PublishBatch appends commits in order, each with its own seq, and returns
// one receipt per commit. The Admitter admits every commit first, as
// PublishCommit does (a refusal names the commit). It is all or nothing:
// the batch is checked first
// (deduplication, draining), then every new commit is appended under one
// acquisition of the lock, so no other commit lands between them; on error
// nothing is appended. Each commit is deduplicated on its own, also against
// the commits before it in the same batch: a repeated key gets the earlier
// commit's receipt with Duplicate set. A batch that is all duplicates
// succeeds even while draining. The hub takes ownership of the facts, as
// Publish does. Facts are validated at the RPC edge, and refused here as in
// Publish (ErrInvalidFact, naming the commit) when some face could not carry
// them; new keys that the dedupe table, or the client's share of it
// (Admitter.Client), has no room for refuse the whole batch with a
// *DedupeFullError (ErrDedupeFull), and more new keys than the client may
// hold at all with ErrTooManyKeys.
//
// With a Log, the Log numbers and deduplicates the commits (see BatchLog),
// with no dedupe table in the hub (so no ErrDedupeFull), and a draining hub
// refuses every batch with ErrDraining, repeats included: the Log alone
// knows which keys it has seen. ctx bounds the wait for its
// acknowledgement, as in PublishCommit.
func (h *Hub) PublishBatch(ctx context.Context, commits []Commit) ([]Receipt, error) {
	ctx, err := h.admitPublish(ctx, commits, true)
	if err != nil {
		return nil, err
	}
	for i, c := range commits {
		if err := checkFacts(i, c.Facts, h.cfg.MaxFactBytes, h.cfg.MaxDataDepth); err != nil {
			return nil, err
		}
	}
	return h.backend.publishBatch(ctx, commits)
}

// indexFacts sets each fact's Index to its position in its commit.
func indexFacts(facts []*ringcastv1.Fact) {
	for i, f := range facts {
		f.Index = uint32(i)
	}
}

// publish is Publish and PublishBatch by client: it fills receipts[i] for
// commits[i].
func (h *Hub) publish(client string, commits []Commit, receipts []Receipt) error {
	for _, c := range commits {
		indexFacts(c.Facts)
	}
	// What each new key will keep, worked out before the lock.
	var ids []string
	var digests []Digest
	var topics [][]string
	for i, c := range commits {
		if c.IdempotencyKey == "" {
			continue
		}
		if ids == nil {
			ids, digests, topics = make([]string, len(commits)), make([]Digest, len(commits)), make([][]string, len(commits))
		}
		ids[i], digests[i], topics[i] = c.Key().ID(), c.Digest(), CommitTopics(c.Facts)
	}
	h.mu.Lock()
	now := h.nowLocked()
	// Check everything before appending anything. dup[i] >= 0 names the
	// earlier commit of this batch whose key commit i repeats.
	fresh, newKeys := 0, 0
	var newBytes int64
	var dup []int
	var keys map[string]int // first commit of this batch with each key
	for i, c := range commits {
		if c.IdempotencyKey == "" {
			fresh++
			continue
		}
		if e := h.dedupe.entry(ids[i], now); e != nil {
			if e.digest != digests[i] {
				h.mu.Unlock()
				clear(receipts)
				return KeyReused(i, len(commits))
			}
			// A retry of a publish that succeeded gets its receipt, even
			// while draining.
			r := e.receipt
			r.Duplicate = true
			receipts[i] = r
			continue
		}
		if j, ok := keys[ids[i]]; ok {
			if digests[j] != digests[i] {
				h.mu.Unlock()
				clear(receipts)
				return KeyReused(i, len(commits))
			}
			if dup == nil {
				dup = make([]int, len(commits))
				for k := range dup {
					dup[k] = -1
				}
			}
			dup[i] = j
			continue
		}
		if len(commits) > 1 {
			if keys == nil {
				keys = make(map[string]int)
			}
			keys[ids[i]] = i
		}
		fresh++
		newKeys++
		newBytes += entryCost(ids[i], topics[i])
	}
	if fresh > 0 && h.state != ringcastv1.ServerState_SERVER_STATE_SERVING {
		h.mu.Unlock()
		clear(receipts)
		return ErrDraining
	}
	if err := h.dedupe.admit(client, newKeys, newBytes, now); err != nil {
		h.mu.Unlock()
		clear(receipts)
		if errors.Is(err, ErrDedupeFull) {
			h.dedupeRefused.Add(1)
		}
		return err
	}
	for i, c := range commits {
		switch {
		case dup != nil && dup[i] >= 0:
			r := receipts[dup[i]]
			r.Duplicate = true
			receipts[i] = r
			continue
		case receipts[i].Duplicate:
			continue
		}
		ev := newCommitEvent(h.epoch, h.ring.head+1, now, c.Facts, c.Traceparent)
		h.appendLocked(ev)
		receipts[i] = Receipt{Seq: ev.Seq, Epoch: h.epoch, Time: now}
		if c.IdempotencyKey != "" {
			h.dedupe.put(client, ids[i], receipts[i], digests[i], topics[i], now)
		}
	}
	h.mu.Unlock()
	if fresh == 0 {
		return nil
	}
	took := time.Since(now) // before the wake-up: signal may yield to the streams
	h.signal()
	for i, c := range commits {
		if !receipts[i].Duplicate {
			h.cfg.Observer.Published(len(c.Facts), took)
		}
	}
	return nil
}

// KeyReused is ErrKeyReused for commit i of a publish of n commits: in a
// batch it names the commit, as the other refusals of one commit do.
// Every store answers a reused key with it.
func KeyReused(i, n int) error {
	if n == 1 {
		return ErrKeyReused
	}
	return fmt.Errorf("commits[%d].idempotency_key: %w", i, ErrKeyReused)
}

// appendLocked appends one commit event to the ring and the latest-per-key
// table. The caller holds mu and signals the notifier after unlocking.
func (h *Hub) appendLocked(ev *Event) {
	h.ring.push(ev)
	h.keys.apply(ev)
}

// publishBatchLog is PublishBatch with a Log.
func (h *Hub) publishBatchLog(ctx context.Context, commits []Commit) ([]Receipt, error) {
	for _, c := range commits {
		indexFacts(c.Facts)
	}
	if len(commits) == 1 {
		r, err := h.publishLog(ctx, commits[0])
		if err != nil {
			return nil, err
		}
		return []Receipt{r}, nil
	}
	bl, ok := h.log.(BatchLog)
	if !ok {
		return nil, ErrBatchUnsupported
	}
	now := time.Now()
	h.mu.RLock()
	serving := h.state == ringcastv1.ServerState_SERVER_STATE_SERVING
	h.mu.RUnlock()
	if !serving {
		return nil, ErrDraining
	}
	rs, err := bl.AppendBatch(ctx, now, commits)
	if err != nil {
		return nil, h.logError(err)
	}
	var top uint64
	for i := range rs {
		rs[i].Epoch = h.epoch
		top = max(top, rs[i].Seq)
	}
	_ = h.waitHead(ctx, top) // the receipts stand even if ctx ends first
	took := time.Since(now)
	for i, c := range commits {
		if !rs[i].Duplicate {
			h.cfg.Observer.Published(len(c.Facts), took)
		}
	}
	return rs, nil
}
