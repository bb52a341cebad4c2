package rpc

import (
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestPublishErrorOfAFullDedupeTable: a refusal for want of dedupe room is
// resource_exhausted with a Retry-After, whether it comes as the hub's
// *DedupeFullError or only matches hub.ErrDedupeFull; too many new keys in
// one batch is invalid_argument.
func TestPublishErrorOfAFullDedupeTable(t *testing.T) {
	for _, err := range []error{
		hub.ErrDedupeFull,
		fmt.Errorf("publish: %w", hub.ErrDedupeFull),
	} {
		var ce *connect.Error
		if got := publishError(err); !errors.As(got, &ce) || ce.Code() != connect.CodeResourceExhausted || ce.Meta().Get("Retry-After") != "1" {
			t.Errorf("publishError(%v) = %v, want resource_exhausted with Retry-After 1", err, got)
		}
	}
	err := fmt.Errorf("%w: 5 of them", hub.ErrTooManyKeys)
	if got := publishError(err); connect.CodeOf(got) != connect.CodeInvalidArgument {
		t.Errorf("publishError(%v) = %v, want invalid_argument", err, got)
	}
}
