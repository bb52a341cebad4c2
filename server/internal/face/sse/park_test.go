package sse_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// The stream behaviours of this package's other tests run parked as well
// (forEachStore); these check what parking itself promises.

func parkingConfig() app.Config {
	cfg := ringtest.Config()
	cfg.ParkSSE = true
	return cfg
}

// TestParkedStreamsHoldNoGoroutine: a caught-up stream waits without a
// goroutine, is woken by a commit, and parks again once it has sent it.
func TestParkedStreamsHoldNoGoroutine(t *testing.T) {
	srv := ringtest.Start(t, parkingConfig())
	h := srv.Hub()
	streams := make([]*stream, 8)
	for i := range streams {
		streams[i] = open(t, srv.URL, "", "")
		streams[i].untilCaughtUp()
	}
	ringtest.WaitStreamGoroutines(t, 0)
	for range 3 {
		seq := publish(t, h, "a/1")
		for _, s := range streams {
			if ev := s.expect(names.EventCommit); ev.ID != id(h, seq) {
				t.Fatalf("commit id %q, want %q", ev.ID, id(h, seq))
			}
		}
		ringtest.WaitStreamGoroutines(t, 0)
	}
	if n := h.Subscribers(); n != int64(len(streams)) {
		t.Fatalf("%d subscribers counted, want %d", n, len(streams))
	}
}

// TestParkedStreamEndsAtItsLease: a parked stream's clock runs without a
// goroutine: it is resumed to end at its lease.
func TestParkedStreamEndsAtItsLease(t *testing.T) {
	cfg := parkingConfig()
	cfg.Lease, cfg.LeaseJitter = 300*time.Millisecond, 0
	srv := ringtest.Start(t, cfg)
	s := open(t, srv.URL, "", "")
	s.untilCaughtUp()
	ringtest.WaitStreamGoroutines(t, 0)
	s.expectEnd()
	waitSubscribers(t, srv, 0)
}

// TestParkedStreamThatStopsReadingIsCut: a parked stream whose client
// stops reading is cut after the write timeout, counted in
// ringcast_write_timeout_cuts_total, and a parked stream beside it
// receives everything meanwhile.
func TestParkedStreamThatStopsReadingIsCut(t *testing.T) {
	cfg := parkingConfig()
	cfg.Window = 4096
	// The write timeout holds for the healthy stream's writes too: on a
	// busy machine they may wait on the scheduler for a good part of a
	// second. The stuck stream's write blocks for good, whatever the
	// timeout.
	cfg.WriteTimeout = 3 * time.Second
	srv := ringtest.Start(t, cfg)
	h := srv.Hub()

	ringtest.OpenStuckSSE(t, srv.Addr)

	healthy := open(t, srv.URL, "", "")
	healthy.untilCaughtUp()
	ringtest.WaitStreamGoroutines(t, 0)

	// 12 MiB: more than the stuck client's buffers hold.
	for range 200 {
		r, err := h.Publish([]*ringcastv1.Fact{ringtest.BigFact()}, "")
		if err != nil {
			t.Fatal(err)
		}
		if ev := healthy.expect(names.EventCommit); ev.ID != id(h, r.Seq) {
			t.Fatalf("healthy stream got %q, want %q", ev.ID, id(h, r.Seq))
		}
	}
	waitSubscribers(t, srv, 1)
	if got := metric(t, srv, "ringcast_write_timeout_cuts_total"); got != "1" {
		t.Fatalf("ringcast_write_timeout_cuts_total = %q, want 1", got)
	}
}

// TestParkedStreamHoldsItsSlot: a parked stream still counts against its
// client's max-streams-per-client after its handler returned, and frees
// the slot when it ends.
func TestParkedStreamHoldsItsSlot(t *testing.T) {
	cfg := parkingConfig()
	cfg.Edge.MaxStreamsPerClient = 1
	srv := ringtest.Start(t, cfg)
	s := open(t, srv.URL, "", "")
	s.untilCaughtUp()
	ringtest.WaitStreamGoroutines(t, 0)
	if code := status(t, srv.URL+"/events"); code != http.StatusTooManyRequests {
		t.Fatalf("a second stream beside a parked one: status %d, want 429", code)
	}
	s.cancel()
	<-s.done
	// The parked stream notices at its next writes (the first may still
	// reach the socket); then its slot is free.
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		code := status(t, srv.URL+"/events")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("a stream after the parked one's client went away: status %d, want 200", code)
		}
		publish(t, srv.Hub(), "a/1")
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSubscribers waits until the hub counts n streams.
func waitSubscribers(t *testing.T, srv *ringtest.Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for srv.Hub().Subscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", srv.Hub().Subscribers(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// status is the status code of a GET of url (its body unread).
func status(t *testing.T, url string) int {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// metric is the value of an unlabelled metric on srv's /metrics.
func metric(t *testing.T, srv *ringtest.Server, name string) string {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("%s not in /metrics", name)
	return ""
}
