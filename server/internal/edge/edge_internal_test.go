package edge

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/edge/access"
)

// TestMaxConnsPerClientDefault: the share is a quarter of --max-conns,
// none when --max-conns has no bound; a value given is kept.
func TestMaxConnsPerClientDefault(t *testing.T) {
	for _, c := range []struct{ conns, per, want int }{{16, 0, 4}, {1000, 0, 250}, {-1, 0, -1}, {1000, 7, 7}, {1000, -1, -1}} {
		e := Config{MaxConns: c.conns, MaxConnsPerClient: c.per}.WithDefaults()
		if e.MaxConnsPerClient != c.want {
			t.Errorf("max-conns %d, max-conns-per-client %d: %d, want %d", c.conns, c.per, e.MaxConnsPerClient, c.want)
		}
	}
}

// TestAccessLogOffCostsNothing: without --access-log the access log is not
// in the front chain, and what the layers inside call to fill its record
// finds none and allocates nothing.
func TestAccessLogOffCostsNothing(t *testing.T) {
	routes := http.NotFoundHandler()
	if _, on := Handler(routes, Options{ReadTimeout: time.Second}).(*accessLog); on {
		t.Fatal("the access log is in the chain without Options.AccessLog")
	}
	if _, on := Handler(routes, Options{ReadTimeout: time.Second, AccessLog: slog.New(slog.DiscardHandler)}).(*accessLog); !on {
		t.Fatal("the access log is not the outermost handler with Options.AccessLog")
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		access.SetSubject(ctx, "alice")
		access.SetCode(ctx, connect.CodeUnauthenticated)
	}); n != 0 {
		t.Errorf("%v allocations per request without a record, want 0", n)
	}
}
