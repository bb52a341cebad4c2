package ringcast

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// PublishOption configures Commit.
type PublishOption func(*publishConfig)

type publishConfig struct {
	key          string
	attempts     int
	outcomeCheck bool
}

// WithIdempotencyKey sets the commit's idempotency key (1..128 characters).
// Without it Commit generates one ("rc-" and 32 random hex digits), so its
// retries are safe either way; set your own to make retries across process
// restarts safe too (e.g. derived from the input being published). The
// attempts and the generated key's form are shared with the TypeScript
// client (clients/conformance/defaults.json).
func WithIdempotencyKey(key string) PublishOption { return func(c *publishConfig) { c.key = key } }

// WithAttempts bounds how many requests Commit sends (default 5; at least 1).
func WithAttempts(n int) PublishOption { return func(c *publishConfig) { c.attempts = max(1, n) } }

// WithOutcomeCheck makes Commit read the commit's outcome by its
// idempotency key (Client.Outcome, a read without side effects) before each
// retry: when an attempt failed with a retryable error — the request may
// have been appended with its receipt lost on the way back — and the
// outcome says applied, Commit returns that original receipt (with
// Duplicate set, as a retry would) and sends no further publish; when it
// says not applied, or the read itself fails (an older server answers
// unimplemented), Commit retries the publish as usual. Outcome reads do
// not count against WithAttempts.
func WithOutcomeCheck() PublishOption { return func(c *publishConfig) { c.outcomeCheck = true } }

// Commit publishes one commit of facts and retries it safely: every attempt
// carries the same idempotency key, so a retry after a lost response (the
// commit was appended, the receipt never arrived) returns the original
// receipt with Duplicate set instead of appending again. Failures Retryable
// classifies as transient are retried after the client's Backoff delay, up
// to WithAttempts requests; permanent ones (invalid_argument, …) and ctx's
// end return at once. It is a thin wrapper over PublishBatch with one
// commit.
//
// The server remembers a key for --dedupe-window (10 min by default):
// retries, and the ctx deadline, must stay well inside it.
//
// A receipt Commit returns with Duplicate set means an earlier attempt of
// the same key appended the commit: the receipt is that commit's original
// one, whether a retried publish returned it or (WithOutcomeCheck) an
// outcome read did.
func (c *Client) Commit(ctx context.Context, facts []*ringcastv1.Fact, opts ...PublishOption) (*ringcastv1.PublishResponse, error) {
	cfg := publishConfig{attempts: defaultPublishAttempts}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.key == "" {
		var b [idempotencyKeyRandomBytes]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		cfg.key = idempotencyKeyPrefix + hex.EncodeToString(b[:])
	}
	commit := &ringcastv1.PublishRequest{Facts: facts, IdempotencyKey: cfg.key}
	b := c.opts.backoff.normalized()
	var err error
	for attempt := 0; attempt < cfg.attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(max(b.Delay(attempt-1), retryAfter(err)))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, errors.Join(ctx.Err(), err)
			case <-t.C:
			}
			if cfg.outcomeCheck {
				if r, ok := c.confirm(ctx, cfg.key, err); ok {
					return r, nil
				}
			}
		}
		var receipts []*ringcastv1.PublishResponse
		receipts, err = c.PublishBatch(ctx, []*ringcastv1.PublishRequest{commit})
		switch {
		case err == nil && len(receipts) == 1:
			return receipts[0], nil
		case err == nil:
			return nil, fmt.Errorf("ringcast: %d receipts for one commit", len(receipts))
		case ctx.Err() != nil:
			return nil, err
		case !Retryable(err):
			return nil, err
		}
		c.opts.logger.DebugContext(ctx, "ringcast: publish failed; retrying with the same idempotency key", "err", err, "attempt", attempt+1, "code", connect.CodeOf(err))
	}
	return nil, fmt.Errorf("ringcast: publish gave up after %d attempts: %w", cfg.attempts, err)
}

// confirm reads the outcome of the commit with key after an attempt that
// failed with lastErr. ok is true when the commit was applied: r is its
// original receipt, marked Duplicate. A failed read (or ctx's end) is
// logged and reported as not confirmed: the caller retries the publish,
// which is safe under the same key.
func (c *Client) confirm(ctx context.Context, key string, lastErr error) (r *ringcastv1.PublishResponse, ok bool) {
	o, err := c.Outcome(ctx, key)
	if err != nil {
		c.opts.logger.DebugContext(ctx, "ringcast: outcome read failed; retrying the publish", "err", err, "publish_err", lastErr)
		return nil, false
	}
	if !o.Applied || o.Receipt == nil {
		return nil, false
	}
	r = o.Receipt // a fresh message of this call's own
	r.Duplicate = true
	c.opts.logger.DebugContext(ctx, "ringcast: publish confirmed by its outcome; not retried", "seq", r.GetSeq(), "publish_err", lastErr)
	return r, true
}
