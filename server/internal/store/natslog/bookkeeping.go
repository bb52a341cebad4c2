package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ringcast/ringcast/server/internal/core/epoch"
)

// The bookkeeping (the stream's record in MetaBucket, mark.go) is checked
// like the commits. At Open a stream that holds commits but has no record
// of its own (the bucket or the key removed, its blocks damaged, a record
// that does not decode) lost its bookkeeping: what it acknowledged is not
// known, and a loss of its newest commits cannot be seen. It is rebuilt
// from the stream only when the stream proves itself whole (no holes, a
// first seq its limits explain, no messages the server reports lost, every
// commit read back as stored), and
// then under a new epoch, so that no seq a lost tail held is given again
// under the epoch consumers hold cursors of; else it is refused (a
// DamagedError naming the bookkeeping), or with Options.Recover recovered
// like any damage. A record that cannot be written, or is not read back as
// written, fails Open (a BookkeepingError): never up yet unable to publish.
//
// While serving, Available reads the record back: a record gone or
// unreadable makes the store not ready, with a BookkeepingError naming it,
// and from then on Append and AppendBatch refuse commits before they reach
// the stream (ErrStoreUnavailable), until the record reads back again. A
// commit stored in the instant between the loss and the first check is
// answered unavailable (its mark cannot be recorded): its outcome is
// unknown to its publisher, who retries it with its idempotency key, as
// after any lost acknowledgement.

// ErrBookkeeping is wrapped by the errors of a record (MetaBucket) that
// cannot be read or written.
var ErrBookkeeping = errors.New("store bookkeeping unavailable")

// A BookkeepingError says what is wrong with the stream's record. It wraps
// ErrBookkeeping and ErrStoreUnavailable. It names the stream and the
// bucket: it is for the server's log and readiness, not for clients.
type BookkeepingError struct {
	Stream, Bucket, Key string
	Why                 string
	Err                 error // the cause, if any
}

func (e *BookkeepingError) Error() string {
	s := fmt.Sprintf("%s: the bookkeeping of JetStream stream %q (key %s of the key-value bucket %s) %s", ErrStoreUnavailable, e.Stream, e.Key, e.Bucket, e.Why)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *BookkeepingError) Unwrap() []error {
	errs := []error{ErrBookkeeping, ErrStoreUnavailable}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// errRefused is the error of a commit refused because the record cannot be
// kept: worded for clients, the details are in the server's log and
// readiness (the BookkeepingError).
var errRefused = &storeError{cond: ErrStoreUnavailable, why: "the store cannot record acknowledged commits", err: ErrBookkeeping}

// errUnreadable is getRecord's error for a record that does not decode.
var errUnreadable = errors.New("the record does not decode")

func (l *Log) bookkeeping(why string, err error) *BookkeepingError {
	return &BookkeepingError{Stream: l.opts.Stream, Bucket: MetaBucket, Key: l.key, Why: why, Err: err}
}

// refuseUnbooked returns errRefused while the record is known to be lost
// (bookErr set), so that no commit reaches the stream without its mark.
func (l *Log) refuseUnbooked() error {
	if l.bookErr.Load() != nil {
		return errRefused
	}
	return nil
}

// lostBookkeeping records that the record is gone or unreadable, logs it
// once, and returns errRefused for the publish at hand.
func (l *Log) lostBookkeeping(e *BookkeepingError) error {
	if l.bookErr.Swap(e) == nil {
		l.opts.Logger.Error("the store's bookkeeping is lost: commits are refused and the server is not ready; restart ringcast to check the stream against it",
			"err", e)
	}
	return errRefused
}

// checkRecord is Available's check of the record: it reads it back and
// returns a BookkeepingError when it is gone, unreadable or of another
// stream; once it reads back again, commits are taken again.
func (l *Log) checkRecord(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	rec, rev, err := l.getRecord(ctx)
	var e *BookkeepingError
	switch {
	case errors.Is(err, errUnreadable):
		e = l.bookkeeping("is unreadable", err)
	case err != nil && l.bucketGone(ctx):
		e = l.bookkeeping("is missing: the bucket is gone", nil)
	case err != nil:
		return unavailable(err)
	case rev == 0:
		e = l.bookkeeping("is missing", nil)
	case !rec.Created.Equal(l.created):
		e = l.bookkeeping("is of another stream of that name", nil)
	}
	if e != nil {
		_ = l.lostBookkeeping(e)
		return e
	}
	if l.bookErr.Swap(nil) != nil {
		l.markMu.Lock()
		l.rev = 0 // read it again before the next mark
		l.markMu.Unlock()
		l.opts.Logger.Info("the store's bookkeeping reads back again: commits are taken", "stream", l.opts.Stream)
	}
	return nil
}

// bucketGone reports whether JetStream, answering, says MetaBucket does not
// exist (a failed request to it may also be an outage).
func (l *Log) bucketGone(ctx context.Context) bool {
	_, err := l.js.KeyValue(ctx, MetaBucket)
	return errors.Is(err, jetstream.ErrBucketNotFound)
}

// rebuild is check's answer to a stream that holds commits but has no
// record of its own (lost: why; rev the revision of the key, 0 when it is
// missing): the stream's damage, when it does not prove itself whole
// (refused without Options.Recover), else the record rebuilt from the
// stream at generation gen+1, written.
func (l *Log) rebuild(ctx, long context.Context, info *jetstream.StreamInfo, gen, rev, unreadable uint64, why string, bad []uint64) (record, uint64, error) {
	st := info.State
	if !l.opts.Recover {
		// Whole means every commit reads back as stored too: the NATS
		// server skips a message whose bytes changed without a word in the
		// stream's state. (Recover has read them all already.)
		l.opts.Logger.Info("the store's bookkeeping is lost: reading every commit of the stream to see whether it is whole",
			"stream", l.opts.Stream, "first", st.FirstSeq, "last", st.LastSeq)
		var err error
		if bad, err = l.corrupted(long, st.FirstSeq, st.LastSeq); err != nil {
			return record{}, 0, err
		}
	}
	d := damage(record{First: 1}, info.Config, st, time.Now())
	if len(bad) > 0 {
		d = append(d, fmt.Sprintf("%d commits are corrupted or cannot be read (seqs %s)", len(bad), seqList(bad)))
	}
	old := epochOf(l.opts.Stream, info.Created, gen)
	if len(d) > 0 && !l.opts.Recover {
		return record{}, 0, &DamagedError{Stream: l.opts.Stream, Epoch: old,
			Damage: append([]string{fmt.Sprintf("its bookkeeping (key %s of the key-value bucket %s) %s, and the stream does not prove itself whole", l.key, MetaBucket, why)}, d...)}
	}
	next := record{Created: info.Created, Generation: gen + 1, Acked: st.LastSeq, First: st.FirstSeq, Deleted: uint64(st.NumDeleted) + unreadable}
	nrev, err := l.putRecord(ctx, next, rev)
	if err != nil || nrev == 0 {
		return record{}, nrev, err
	}
	msg := "the store's bookkeeping is lost and the stream proves itself whole: the bookkeeping is rebuilt from the stream, and the stream is served under a NEW epoch (a loss of its newest commits cannot be seen without it): every consumer resyncs"
	if len(d) > 0 {
		msg = "the store's bookkeeping is lost and the stream is damaged; --store-recover: it is served under a NEW epoch, every consumer resyncs"
	}
	l.opts.Logger.Warn(msg, "stream", l.opts.Stream, "bucket", MetaBucket, "key", l.key, "bookkeeping", why,
		"damage", strings.Join(d, "; "), "old_epoch", epoch.Format(old), "epoch", epoch.Format(epochOf(l.opts.Stream, info.Created, next.Generation)),
		"generation", next.Generation, "first", st.FirstSeq, "last", st.LastSeq)
	return next, nrev, nil
}

// verify reads the record back after check wrote or read it at rev: a
// bucket that does not keep what is written to it fails Open, rather than
// every publish after it. again: another writer changed it since (check
// looks again).
func (l *Log) verify(ctx context.Context, want record, rev uint64) (again bool, err error) {
	got, grev, err := l.getRecord(ctx)
	switch {
	case err != nil:
		return false, l.bookkeeping("cannot be read back", err)
	case grev == 0:
		return false, l.bookkeeping("is not kept: it is missing right after it was written", nil)
	case grev != rev:
		return true, nil
	case !got.Created.Equal(want.Created) || got.Generation != want.Generation || got.Acked < want.Acked:
		return false, l.bookkeeping(fmt.Sprintf("does not read back as written (revision %d)", rev), nil)
	}
	return false, nil
}
