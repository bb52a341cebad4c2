package ringcast

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Outcome is what became of a publish with an idempotency key, read
// without writing (GetPublishOutcome; docs/protocol.md).
type Outcome struct {
	// Applied: a commit with the key was appended.
	Applied bool
	// Receipt is that commit's original receipt (seq, instance epoch,
	// event time; Duplicate false) when Applied, nil otherwise.
	Receipt *ringcastv1.PublishResponse
	// RememberedSince is since when the server remembers keys (its dedupe
	// window, or the start of what its store holds, whichever is later).
	// Not Applied promises only that no commit with the key was appended
	// at or after this time: a publish older than it may have been
	// appended and forgotten. Zero when the server did not say.
	RememberedSince time.Time
}

// errEmptyKey refuses an outcome read without a key before any request.
var errEmptyKey = errors.New("ringcast: an outcome is read by an idempotency key; the key is empty")

// Outcome reads what became of the publish sent with idempotencyKey,
// without writing: Applied with the original receipt, or not applied at
// or after RememberedSince. It is a NO_SIDE_EFFECTS call, so it may be
// repeated freely. An empty key fails with invalid_argument without a
// request. Under --auth jwt it needs a token; a token that may not
// subscribe to every topic of the commit gets the answer for an unknown
// key (not applied), never the receipt.
func (c *Client) Outcome(ctx context.Context, idempotencyKey string) (Outcome, error) {
	if idempotencyKey == "" {
		return Outcome{}, connect.NewError(connect.CodeInvalidArgument, errEmptyKey)
	}
	res, err := c.rpc.GetPublishOutcome(ctx, connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: idempotencyKey}))
	if err != nil {
		return Outcome{}, err
	}
	m := res.Msg
	o := Outcome{Applied: m.GetApplied()}
	if o.Applied {
		o.Receipt = m.GetReceipt()
	}
	if ts := m.GetRememberedSince(); ts != nil {
		o.RememberedSince = ts.AsTime()
	}
	return o, nil
}
