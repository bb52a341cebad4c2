package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// TestStoreConditionsAreToldByTheirClass: an error of the store reaches the
// client as its class alone, the same words whatever the store said —
// never a stream's name, a seq, a key or the client library's message —
// on publishes, outcomes and streams; the store's own words stay on the
// error for the server's log (Detail). Errors of the request itself keep
// the hub's words.
func TestStoreConditionsAreToldByTheirClass(t *testing.T) {
	secret := errors.New(`JetStream stream "tenant-b": the duplicate window names seq 4711 for Nats-Msg-Id "rk1-x", but that message carries "inv-7": nats: maximum payload exceeded`)
	for _, tc := range []struct {
		err  error
		code connect.Code
	}{
		{fmt.Errorf("%w: %w", hub.ErrUnavailable, secret), connect.CodeUnavailable},
		{fmt.Errorf("%w: %w: %w", hub.ErrUnavailable, hub.ErrLogDamaged, secret), connect.CodeUnavailable},
		{fmt.Errorf("%w: %w: %w", hub.ErrUnavailable, hub.ErrLogReplaced, secret), connect.CodeUnavailable},
		{fmt.Errorf("%w (%w)", hub.ErrBatchUnsupported, secret), connect.CodeUnimplemented},
	} {
		_, say, _ := codeOf(tc.err)
		for name, got := range map[string]error{
			"publish": publishError(tc.err),
			"stream":  subscribeError(context.Background(), tc.err),
		} {
			var ce *connect.Error
			if !errors.As(got, &ce) || ce.Code() != tc.code || ce.Message() != say {
				t.Fatalf("%s: %v, want %v: %s", name, got, tc.code, say)
			}
			for _, leak := range []string{"tenant-b", "4711", "inv-7", "rk1-", "nats:", "JetStream"} {
				if strings.Contains(ce.Message(), leak) {
					t.Fatalf("%s: %q tells the client %q", name, ce.Message(), leak)
				}
			}
			var d interface{ Detail() string }
			if !errors.As(got, &d) || !strings.Contains(d.Detail(), "4711") {
				t.Fatalf("%s: the store's words are not kept for the log", name)
			}
		}
	}
	if got := publishError(hub.KeyReused(1, 2)); connect.CodeOf(got) != connect.CodeAlreadyExists || !strings.Contains(got.Error(), "commits[1].idempotency_key") {
		t.Fatalf("a reused key: %v, want already_exists in the hub's words", got)
	}
}
