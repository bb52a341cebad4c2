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
	key      string
	attempts int
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
