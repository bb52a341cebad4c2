package natslog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// The epoch names an unbroken log. A stream that lost commits it had
// acknowledged, has a hole, or lost its oldest commits without its limits
// discarding them must not be served under the epoch its consumers hold
// cursors of: the seqs past its damage would be given again to other
// commits, and a cursor past them would resume without a word.
//
// So ringcast keeps, beside the stream, a record of what it acknowledged:
// the high-water mark (the highest seq acknowledged to a publisher), the
// first seq the stream held and the holes it was known to have. The record
// is a key (the stream's name) of the JetStream key-value bucket MetaBucket,
// which is another stream with its own files: damage to the commit stream's
// message blocks leaves it whole. Append and AppendBatch raise the mark as
// JetStream acknowledges their commits, in the background (raise): one
// write in flight at a time, each covering every acknowledgement before it,
// so a publish costs no round trip of its own for it, and the mark trails
// the acknowledgements by at most the write in flight, a pause of markGap
// (2 ms) and the write after it. Flush, which the hub calls
// when it closes, waits for it: after a clean stop the mark holds every
// acknowledged commit. What the trail leaves uncovered is the last commits
// acknowledged before a crash, and only if the stream then also loses
// those same commits; a consumer's cursor of one of them names its
// commit's fingerprint and is resynced (REASON_COMMIT_MISMATCH) should
// another commit take its seq. Range checks against the acknowledgements
// themselves, not the mark.
//
// Open compares the stream with the record and refuses a damaged stream,
// naming it and the damage; with Options.Recover it continues under a new
// epoch instead: the stream's generation (kept in the stream's own
// metadata, MetaGeneration, and in the record) goes up by one, and the
// epoch is the hash of the stream's name, creation time and generation, so
// that every consumer's cursor of the old epoch gets ResyncRequired. Seqs
// go on from the stream's last seq: none is reissued under an epoch. Range (about every
// second) checks the stream against what this Log has seen the same way,
// and so notices a stream purged or cut under a running replica: the error
// wraps hub.ErrLogDamaged, on which the hub drains and stops.

// MetaBucket is the JetStream key-value bucket holding ringcast's record of
// each stream it serves.
const MetaBucket = "ringcast_meta"

// MetaGeneration is the stream metadata key holding the stream's
// generation: how often it was recovered (absent: 0).
const MetaGeneration = "ringcast.generation"

// record is what ringcast knows of a stream beside it.
type record struct {
	// Created is the stream's creation time: a record of another stream of
	// the same name (deleted and created again) is not this one's.
	Created time.Time `json:"created"`
	// Generation counts recoveries; the epoch changes with it.
	Generation uint64 `json:"generation"`
	// Acked is the high-water mark: every seq up to it was acknowledged.
	Acked uint64 `json:"acked"`
	// First is the first seq the stream held when it was last checked; a
	// later first seq must be explained by the stream's limits.
	First uint64 `json:"first"`
	// Deleted is the holes a recovery accepted.
	Deleted uint64 `json:"deleted"`
	// Recovered is when Generation was last taken by a recovery (zero:
	// never), so that the other replicas of a rollout started with
	// Options.Recover take the same generation (see recoverGrace).
	Recovered time.Time `json:"recovered,omitzero"`
}

// recoverGrace is how long after a recovery an Open with Options.Recover
// of a whole stream takes that recovery's generation instead of a new one:
// the other replicas of the rollout that recovered it. Past it, Recover on
// a whole stream (a restored copy) starts another generation.
const recoverGrace = 10 * time.Minute

// epochOf is the epoch of a stream's generation: Epoch (name and creation
// time) for generation 0, so that a stream never recovered keeps the epoch
// it always had.
func epochOf(name string, created time.Time, gen uint64) uint64 {
	if gen == 0 {
		return Epoch(name, created)
	}
	sum := sha256.Sum256([]byte(name + "\x00" + created.UTC().Format(time.RFC3339Nano) + "\x00" + strconv.FormatUint(gen, 10)))
	e := binary.BigEndian.Uint64(sum[:8])
	if e == 0 {
		e = 1
	}
	return e
}

var plainKey = regexp.MustCompile(`^[-_a-zA-Z0-9]+$`)

// metaKey is the stream's key in MetaBucket: its name, or its name in hex
// when it has characters a key may not.
func metaKey(stream string) string {
	if plainKey.MatchString(stream) {
		return stream
	}
	return "x" + hex.EncodeToString([]byte(stream))
}

// generationOf reads MetaGeneration from a stream's metadata.
func generationOf(c jetstream.StreamConfig) (uint64, error) {
	v, ok := c.Metadata[MetaGeneration]
	if !ok {
		return 0, nil
	}
	g, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("JetStream stream %q: metadata %s is %q, not a number", c.Name, MetaGeneration, v)
	}
	return g, nil
}

// damage describes how the stream's state breaks rec: lost acknowledged
// commits, holes, oldest commits gone without the limits discarding them,
// messages the server reports lost. Empty: the log is unbroken.
func damage(rec record, c jetstream.StreamConfig, st jetstream.StreamState, now time.Time) []string {
	var d []string
	if st.LastSeq < rec.Acked {
		d = append(d, fmt.Sprintf("its last seq is %d, yet commits up to seq %d were acknowledged: %d acknowledged commits are lost",
			st.LastSeq, rec.Acked, rec.Acked-st.LastSeq))
	}
	if st.NumDeleted > 0 && uint64(st.NumDeleted) > rec.Deleted {
		d = append(d, fmt.Sprintf("%d commits between seq %d and %d are missing (holes)", uint64(st.NumDeleted)-rec.Deleted, st.FirstSeq, st.LastSeq))
	}
	if first := max(rec.First, 1); st.FirstSeq > first && !discarded(c, st, now) {
		d = append(d, fmt.Sprintf("its commits from seq %d to %d are gone, and its limits did not discard them (purged, or message blocks lost)",
			first, st.FirstSeq-1))
	}
	if st.Lost != nil && len(st.Lost.Msgs) > 0 {
		d = append(d, fmt.Sprintf("the NATS server reports %d messages lost", len(st.Lost.Msgs)))
	}
	return d
}

// discarded reports whether the stream's limits may have discarded its
// oldest commits up to its first seq. Each limit keeps the newest commit,
// except the age limit once the newest is older than it; a count limit
// alone discards only down to that count. The byte and age limits cannot
// be told from a loss of the oldest blocks while the stream holds commits.
func discarded(c jetstream.StreamConfig, st jetstream.StreamState, now time.Time) bool {
	if st.Msgs == 0 {
		return c.MaxAge > 0 && now.Sub(st.LastTime) >= c.MaxAge-cutoffMargin
	}
	if c.MaxBytes > 0 || c.MaxAge > 0 {
		return true
	}
	return c.MaxMsgs > 0 && st.Msgs >= uint64(c.MaxMsgs)
}

// A DamagedError is Open's error for a damaged stream without
// Options.Recover.
type DamagedError struct {
	Stream string
	Epoch  uint64
	Damage []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("JetStream stream %q is damaged: %s; it is not served under its epoch %s. Start with --store-recover to go on under a new epoch (every consumer resyncs), or restore the stream",
		e.Stream, strings.Join(e.Damage, "; "), epoch.Format(e.Epoch))
}

func (e *DamagedError) Unwrap() error { return hub.ErrLogDamaged }

// meta opens (creating it when absent) the key-value bucket of the records.
func (l *Log) meta(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := l.js.KeyValue(ctx, MetaBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = l.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      MetaBucket,
			Description: "ringcast: per stream, the highest acknowledged seq and the epoch's generation",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    l.opts.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = l.js.KeyValue(ctx, MetaBucket) // another replica created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("JetStream key-value bucket %q: %w", MetaBucket, err)
	}
	// A replicated bucket just created may not answer reads at once (its
	// servers still set up their direct gets): ask until it does, or ctx
	// ends, so that Open's first read of the record is answered.
	for {
		_, err := kv.Get(ctx, metaKey(l.opts.Stream))
		if !errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil {
			return kv, nil // the record's read (getRecord) reports any other error
		}
		pause(ctx, metaRetry)
	}
}

// metaRetry is how long meta waits before it asks a new bucket again.
const metaRetry = 100 * time.Millisecond

// getRecord reads the stream's record and its revision (0: none).
func (l *Log) getRecord(ctx context.Context) (record, uint64, error) {
	e, err := l.kv.Get(ctx, l.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record{}, 0, nil
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("read %s/%s: %w", MetaBucket, l.key, err)
	}
	var r record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return record{}, e.Revision(), fmt.Errorf("read %s/%s: %w: %w", MetaBucket, l.key, errUnreadable, err)
	}
	return r, e.Revision(), nil
}

// putRecord writes r if the record is still at rev (0: absent) and
// returns its new revision; 0 when another writer came first.
func (l *Log) putRecord(ctx context.Context, r record, rev uint64) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	var nrev uint64
	if rev == 0 {
		nrev, err = l.kv.Create(ctx, l.key, data)
	} else {
		nrev, err = l.kv.Update(ctx, l.key, data, rev)
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		return 0, nil
	}
	if err != nil {
		return 0, l.bookkeeping("cannot be written", err)
	}
	return nrev, nil
}

// check compares the stream with its record at Open, and sets the Log's
// generation, epoch and mark: it makes the record of a stream that has none
// (or whose record is of an earlier stream of its name), refuses a damaged
// stream, or with Options.Recover moves it to a new generation.
func (l *Log) check(ctx, long context.Context, info *jetstream.StreamInfo) error {
	gen, err := generationOf(info.Config)
	if err != nil {
		return err
	}
	var bad []uint64 // commits that cannot be read or are corrupted
	unreadable := uint64(0)
	if l.opts.Recover {
		if bad, err = l.corrupted(long, info.State.FirstSeq, info.State.LastSeq); err != nil {
			return err
		}
		for _, seq := range bad {
			// A commit the server serves but whose bytes changed is
			// removed; one the server cannot read itself it skips, and the
			// new generation accepts it as a hole.
			if err := l.stream.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				unreadable++
			}
		}
		if len(bad) > 0 {
			if info, err = l.stream.Info(ctx); err != nil {
				return fmt.Errorf("JetStream stream %q: %w", l.opts.Stream, err)
			}
		}
	}
	st := info.State
	for {
		rec, rev, err := l.getRecord(ctx)
		unreadableRecord := errors.Is(err, errUnreadable)
		if err != nil && !unreadableRecord {
			return err
		}
		if unreadableRecord || rev == 0 || !rec.Created.Equal(info.Created) {
			// No record of this stream.
			if st.LastSeq > 0 || unreadableRecord {
				// It holds commits: its bookkeeping is lost (bookkeeping.go).
				why := "is missing"
				switch {
				case unreadableRecord:
					why = "does not decode"
				case rev != 0:
					why = "is of another stream of that name"
				}
				next, nrev, err := l.rebuild(ctx, long, info, gen, rev, unreadable, why, bad)
				if err != nil {
					return err
				} else if nrev == 0 {
					continue
				}
				rec, rev, gen = next, nrev, next.Generation
				bad = nil // the rebuild's new generation accepted them
			} else {
				// A stream that never held a commit: what it holds now is the baseline.
				fresh := record{Created: info.Created, Generation: gen, Acked: st.LastSeq, First: st.FirstSeq, Deleted: uint64(st.NumDeleted)}
				nrev, err := l.putRecord(ctx, fresh, rev)
				if err != nil {
					return err
				} else if nrev == 0 {
					continue
				}
				rec, rev = fresh, nrev
			}
		}
		gen = max(gen, rec.Generation)
		rec.Generation = gen
		d := damage(rec, info.Config, st, time.Now())
		if len(bad) > 0 {
			d = append(d, fmt.Sprintf("%d commits are corrupted or cannot be read (seqs %s)", len(bad), seqList(bad)))
		}
		now := time.Now()
		restored := len(d) == 0 && l.opts.Recover && !(now.After(rec.Recovered) && now.Sub(rec.Recovered) < recoverGrace)
		if len(d) > 0 || restored {
			// With Recover a stream is served under a new epoch whether
			// it is damaged or whole: a restored copy of an older store
			// looks whole, yet would give its seqs again to other commits
			// (unless a replica recovered it moments ago: its generation).
			if !l.opts.Recover {
				return &DamagedError{Stream: l.opts.Stream, Epoch: epochOf(l.opts.Stream, info.Created, gen), Damage: d}
			}
			old := epochOf(l.opts.Stream, info.Created, gen)
			next := record{Created: info.Created, Generation: gen + 1, Acked: st.LastSeq, First: st.FirstSeq, Deleted: uint64(st.NumDeleted) + unreadable, Recovered: now}
			nrev, err := l.putRecord(ctx, next, rev)
			if err != nil {
				return err
			} else if nrev == 0 {
				continue // another replica wrote first: check against its record
			}
			rec, rev, gen = next, nrev, next.Generation
			msg := "the JetStream stream is damaged; --store-recover: it is served under a NEW epoch, every consumer resyncs"
			if len(d) == 0 {
				msg = "--store-recover: the JetStream stream (restored, or recovered) is served under a NEW epoch, every consumer resyncs; start without --store-recover from now on"
				d = append(d, "none found")
			}
			l.opts.Logger.Warn(msg,
				"stream", l.opts.Stream, "damage", strings.Join(d, "; "),
				"old_epoch", epoch.Format(old), "epoch", epoch.Format(epochOf(l.opts.Stream, info.Created, gen)),
				"generation", gen, "first", st.FirstSeq, "last", st.LastSeq)
		} else if st.FirstSeq > rec.First {
			rec.First = st.FirstSeq // discarded by the limits
		}
		if again, err := l.verify(ctx, rec, rev); err != nil {
			return err
		} else if again {
			continue
		}
		if err := l.setGeneration(ctx, info, gen); err != nil {
			return err
		}
		l.gen = gen
		l.epoch = epochOf(l.opts.Stream, info.Created, gen)
		l.cached, l.rev = rec, rev // the record as written, or with this generation and first seq
		l.marked.Store(rec.Acked)
		l.first.Store(rec.First)
		l.deleted.Store(rec.Deleted)
		return nil
	}
}

// corrupted reads every commit of the stream from first to last and
// returns the seqs of those whose bytes do not match their checksum or do
// not decode. It logs its progress every rebuildProgress and stops when
// ctx ends.
func (l *Log) corrupted(ctx context.Context, first, last uint64) ([]uint64, error) {
	var bad []uint64
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for from := max(first, 1); from <= last; {
		next := from
		rctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
		err := l.directGet(rctx, from, blockSize, func(seq uint64, hdr nats.Header, data []byte) error {
			for s := next; s < seq && l.deleted.Load() == 0; s++ {
				bad = append(bad, s) // skipped: the server could not read it
			}
			if _, err := l.decode(seq, hdr, data); errors.Is(err, hub.ErrLogDamaged) {
				bad = append(bad, seq)
			}
			next = max(next, seq+1)
			return nil
		})
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("check the commits of JetStream stream %q: stopped at seq %d of %d: %w", l.opts.Stream, from, last, context.Cause(ctx))
		}
		if err != nil {
			return nil, fmt.Errorf("check the commits of JetStream stream %q at seq %d: %w", l.opts.Stream, from, err)
		}
		if next == from {
			break // nothing at or after from
		}
		from = next
		select {
		case <-tick.C:
			l.opts.Logger.Info("--store-recover: checking the stream's commits", "stream", l.opts.Stream, "seq", from-1, "last", last, "corrupted", len(bad))
		default:
		}
	}
	return bad, nil
}

// checkGap is called when a read of the stream skipped the seqs from
// missing to upto: it returns an error wrapping hub.ErrLogDamaged unless
// the stream's limits discarded them or a recovery accepted holes. (The
// NATS server skips a message whose bytes on disk do not match its own
// checksum as if it were deleted, without changing the stream's state.)
func (l *Log) checkGap(ctx context.Context, missing, upto uint64) error {
	if missing > upto || l.deleted.Load() > 0 {
		return nil
	}
	info, err := l.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.FirstSeq > upto || info.State.NumDeleted > 0 {
		return nil // discarded by the limits, or holes Range reports
	}
	return &CorruptError{Stream: l.opts.Stream, Seq: missing, Upto: upto}
}

// progressEvery is how often a long check of the stream logs its progress.
const progressEvery = 5 * time.Second

// seqList shows up to 20 seqs.
func seqList(seqs []uint64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 20 {
			fmt.Fprintf(&b, " … (%d more)", len(seqs)-20)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(s, 10))
	}
	return b.String()
}

// setGeneration writes gen into the stream's metadata when it has less.
func (l *Log) setGeneration(ctx context.Context, info *jetstream.StreamInfo, gen uint64) error {
	if have, _ := generationOf(info.Config); have >= gen {
		return nil
	}
	c := info.Config
	md := make(map[string]string, len(c.Metadata)+1)
	for k, v := range c.Metadata {
		md[k] = v
	}
	md[MetaGeneration] = strconv.FormatUint(gen, 10)
	c.Metadata = md
	if _, err := l.js.UpdateStream(ctx, c); err != nil {
		return fmt.Errorf("JetStream stream %q: record generation %d: %w", l.opts.Stream, gen, err)
	}
	info.Config = c
	return nil
}

// raise has the record's high-water mark raised to at least seq in the
// background: one writer at a time (markLoop), which writes the highest
// seq asked for until the mark holds it.
func (l *Log) raise(seq uint64) {
	for {
		w := l.wanted.Load()
		if seq <= w || l.wanted.CompareAndSwap(w, seq) {
			break
		}
	}
	if l.marked.Load() < seq && l.marking.CompareAndSwap(false, true) {
		go l.markLoop()
	}
}

// markGap is the least time between two writes of the mark while
// publishes go on: one write covers the acknowledgements of a markGap, not
// one write per acknowledgement.
const markGap = 2 * time.Millisecond

// markLoop writes the mark until it holds every seq asked for, then ends;
// a raise after its last look starts it again. A write's failure is kept
// for the next append (markFailure) and ends the loop: the next raise
// tries again.
func (l *Log) markLoop() {
	for {
		if want := l.wanted.Load(); l.marked.Load() < want {
			ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
			err := l.mark(ctx, want)
			cancel()
			if err != nil {
				l.markErr.Store(&err)
				l.marking.Store(false)
				return
			}
			l.markErr.Store(nil)
			if l.marked.Load() < l.wanted.Load() {
				time.Sleep(markGap) // let the acknowledgements gather
			}
			continue
		}
		l.marking.Store(false)
		// A raise between the look and the store saw the loop running.
		if l.marked.Load() >= l.wanted.Load() || !l.marking.CompareAndSwap(false, true) {
			return
		}
	}
}

// markFailure is the error of the mark's last write, when it failed for
// want of the record or because the stream was recovered under a new epoch
// by another replica (hub.ErrLogReplaced): the next append returns it
// before it publishes, as it returned the write's own error. A write that
// failed otherwise (NATS unreachable a moment) is tried again by the next
// append's raise.
func (l *Log) markFailure() error {
	p := l.markErr.Load()
	if p == nil {
		return nil
	}
	if err := *p; errors.Is(err, hub.ErrLogReplaced) {
		return err
	}
	return nil
}

var _ hub.FlushLog = (*Log)(nil)

// Flush implements hub.FlushLog: it returns once the mark holds every
// commit acknowledged so far, writing it itself if the writer has not.
func (l *Log) Flush(ctx context.Context) error {
	want := l.wanted.Load()
	if l.marked.Load() >= want {
		return nil
	}
	return l.mark(ctx, want)
}

// mark raises the record's high-water mark to at least seq. Callers share writes: one holding the
// lock writes the highest seq seen, which covers those waiting. A record
// of another generation means another replica recovered the stream under a
// new epoch: the error wraps hub.ErrLogReplaced.
func (l *Log) mark(ctx context.Context, seq uint64) error {
	if l.marked.Load() >= seq {
		return nil
	}
	l.markMu.Lock()
	defer l.markMu.Unlock()
	if l.marked.Load() >= seq {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	target := max(seq, l.head.Load())
	for {
		rec, rev := l.cached, l.rev
		if rev == 0 {
			var err error
			if rec, rev, err = l.getRecord(ctx); errors.Is(err, errUnreadable) {
				return l.lostBookkeeping(l.bookkeeping("is unreadable", err))
			} else if err != nil && l.bucketGone(ctx) {
				return l.lostBookkeeping(l.bookkeeping(fmt.Sprintf("is missing: the bucket is gone, and the acknowledged seq %d cannot be recorded", target), nil))
			} else if err != nil {
				return err
			}
		}
		if rev == 0 {
			return l.lostBookkeeping(l.bookkeeping(fmt.Sprintf("is missing: the acknowledged seq %d cannot be recorded", target), nil))
		}
		if !rec.Created.Equal(l.created) || rec.Generation != l.gen {
			return fmt.Errorf("%w: the record of JetStream stream %q in %s is of another stream or generation (%d, this replica serves %d): it was recovered under a new epoch",
				hub.ErrLogReplaced, l.opts.Stream, MetaBucket, rec.Generation, l.gen)
		}
		if rec.Acked >= target {
			l.cached, l.rev = rec, rev
			l.marked.Store(rec.Acked)
			return nil
		}
		next := rec
		next.Acked = target
		data, err := json.Marshal(next)
		if err != nil {
			return err
		}
		nrev, err := l.kv.Update(ctx, l.key, data, rev)
		var apiErr *jetstream.APIError
		if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
			l.rev = 0 // another replica wrote: read it again
			continue
		}
		if err != nil && l.bucketGone(ctx) {
			return l.lostBookkeeping(l.bookkeeping(fmt.Sprintf("is missing: the bucket is gone, and the acknowledged seq %d cannot be recorded", target), nil))
		}
		if err != nil {
			return fmt.Errorf("record the acknowledged seq %d in %s/%s: %w", target, MetaBucket, l.key, err)
		}
		l.cached, l.rev = next, nrev
		l.marked.Store(target)
		return nil
	}
}

// checkRunning is Range's check of the stream's state against what this
// Log had seen before it asked: known is the highest seq acknowledged or
// followed, read before info was asked for (a later ack is not in info).
// A last seq below known is confirmed by asking the stream's leader for
// the message at known, so that an answer older than the ack is not taken
// for a loss.
func (l *Log) checkRunning(ctx context.Context, known uint64, info *jetstream.StreamInfo) error {
	if g, err := generationOf(info.Config); err == nil && g != l.gen {
		return fmt.Errorf("%w: JetStream stream %q is at generation %d, this replica serves generation %d (epoch %s): it was recovered under a new epoch",
			hub.ErrLogReplaced, l.opts.Stream, g, l.gen, epoch.Format(l.epoch))
	}
	rec := record{Acked: known, First: l.first.Load(), Deleted: l.deleted.Load()}
	if d := damage(rec, info.Config, info.State, time.Now()); len(d) > 0 {
		if info.State.LastSeq < known {
			if _, _, err := l.leaderGet(ctx, known); err == nil {
				return nil // the message is there: the state answered was older
			} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
				return err
			}
		}
		return fmt.Errorf("%w: JetStream stream %q changed under this replica (epoch %s): %s",
			hub.ErrLogDamaged, l.opts.Stream, epoch.Format(l.epoch), strings.Join(d, "; "))
	}
	for {
		f := l.first.Load()
		if info.State.FirstSeq <= f || l.first.CompareAndSwap(f, info.State.FirstSeq) {
			return nil
		}
	}
}
