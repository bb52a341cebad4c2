package goclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// lossyProxy forwards to target; the first `lose` PublishBatch requests
// reach the server (and are appended) but their responses are replaced by
// 503 Service Unavailable, as when a connection drops after the commit.
func lossyProxy(t *testing.T, target string, lose int32) (proxyURL string, batches *atomic.Int32) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	batches = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/PublishBatch") && batches.Add(1) <= lose {
			proxy.ServeHTTP(httptest.NewRecorder(), r) // appended; the receipt is lost
			http.Error(w, "connection lost", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, batches
}

// TestCommitRetriesWithTheSameKey: two responses lost after the server
// appended the commit; Commit retries with the same idempotency key and
// returns the original receipt (Duplicate) — one commit in the ring.
func TestCommitRetriesWithTheSameKey(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	pu, batches := lossyProxy(t, srv.URL, 2)
	c := newClient(t, pu, ringcast.ProtocolConnect)
	_, before := srv.Hub().Bounds()
	r, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	_, after := srv.Hub().Bounds()
	if after != before+1 || r.GetSeq() != after || !r.GetDuplicate() || batches.Load() != 3 {
		t.Fatalf("receipt %v, head %d→%d, %d requests: want the original seq %d as a duplicate after 3 requests", r, before, after, batches.Load(), before+1)
	}
}

// TestCommitDoesNotRetryPermanentErrors: invalid_argument returns at once.
func TestCommitDoesNotRetryPermanentErrors(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	pu, batches := lossyProxy(t, srv.URL, 0)
	c := newClient(t, pu, ringcast.ProtocolConnect)
	_, err := c.Commit(context.Background(), nil, ringcast.WithIdempotencyKey("mine"))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || batches.Load() != 1 {
		t.Fatalf("err %v after %d requests, want invalid_argument after 1", err, batches.Load())
	}
}

// TestCommitGivesUpAfterItsAttempts: every response lost; WithAttempts(2)
// sends two requests and returns the last error.
func TestCommitGivesUpAfterItsAttempts(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	pu, batches := lossyProxy(t, srv.URL, 100)
	c := newClient(t, pu, ringcast.ProtocolConnect)
	_, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a/b", Type: "t"}}, ringcast.WithAttempts(2))
	if connect.CodeOf(err) != connect.CodeUnavailable || batches.Load() != 2 {
		t.Fatalf("err %v after %d requests, want unavailable after 2", err, batches.Load())
	}
}
