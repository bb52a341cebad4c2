package ringcast_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// fakeService answers publishes and outcome reads from a script, and
// records what it was asked. It is a plain Connect handler: no ringcast
// server is involved.
type fakeService struct {
	ringcastv1connect.UnimplementedEventServiceHandler

	mu sync.Mutex
	// publishErrs: the n-th PublishBatch fails with publishErrs[n] when
	// that is non-nil (the commit is "appended" either way).
	publishErrs []error
	publishes   int
	// outcome answers GetPublishOutcome (nil: unimplemented).
	outcome  *ringcastv1.GetPublishOutcomeResponse
	outcomes []string // the keys asked for
	subs     []*ringcastv1.SubscribeEventsRequest
	// streams[n] is sent on the n-th SubscribeEvents, which then ends OK;
	// a subscribe beyond them waits for the client to go away.
	streams [][]*ringcastv1.SubscribeEventsResponse
	extra   chan struct{}
}

var receipt = &ringcastv1.PublishResponse{Seq: 7, InstanceEpoch: 0x1234, EventTime: timestamppb.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}

func (f *fakeService) PublishBatch(_ context.Context, req *connect.Request[ringcastv1.PublishBatchRequest]) (*connect.Response[ringcastv1.PublishBatchResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.publishes
	f.publishes++
	if n < len(f.publishErrs) && f.publishErrs[n] != nil {
		return nil, f.publishErrs[n]
	}
	r := &ringcastv1.PublishResponse{Seq: receipt.Seq, InstanceEpoch: receipt.InstanceEpoch, EventTime: receipt.EventTime, Duplicate: n > 0}
	return connect.NewResponse(&ringcastv1.PublishBatchResponse{Receipts: []*ringcastv1.PublishResponse{r}}), nil
}

func (f *fakeService) GetPublishOutcome(_ context.Context, req *connect.Request[ringcastv1.GetPublishOutcomeRequest]) (*connect.Response[ringcastv1.GetPublishOutcomeResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outcomes = append(f.outcomes, req.Msg.GetIdempotencyKey())
	if f.outcome == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("not served"))
	}
	return connect.NewResponse(f.outcome), nil
}

func (f *fakeService) SubscribeEvents(ctx context.Context, req *connect.Request[ringcastv1.SubscribeEventsRequest], st *connect.ServerStream[ringcastv1.SubscribeEventsResponse]) error {
	f.mu.Lock()
	n := len(f.subs)
	f.subs = append(f.subs, req.Msg)
	f.mu.Unlock()
	if n >= len(f.streams) {
		select {
		case f.extra <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	for _, m := range f.streams[n] {
		if err := st.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func fakeClient(t *testing.T, f *fakeService) *ringcast.Client {
	t.Helper()
	_, h := ringcastv1connect.NewEventServiceHandler(f)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := ringcast.NewClient(srv.URL, ringcast.WithBackoff(ringcast.Backoff{Min: time.Millisecond, Initial: time.Millisecond, Max: 2 * time.Millisecond}))
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestOutcomeEmptyKeySendsNothing(t *testing.T) {
	f := &fakeService{}
	c := fakeClient(t, f)
	_, err := c.Outcome(context.Background(), "")
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("err %v, want invalid_argument", err)
	}
	if len(f.outcomes) != 0 {
		t.Fatalf("%d requests sent for an empty key", len(f.outcomes))
	}
}

func TestOutcomeReadsTheResponse(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 50, 0, 0, time.UTC)
	f := &fakeService{outcome: &ringcastv1.GetPublishOutcomeResponse{Applied: true, Receipt: receipt, RememberedSince: timestamppb.New(since)}}
	c := fakeClient(t, f)
	o, err := c.Outcome(context.Background(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Applied || o.Receipt.GetSeq() != 7 || o.Receipt.GetInstanceEpoch() != 0x1234 || !o.RememberedSince.Equal(since) {
		t.Fatalf("outcome %+v", o)
	}
	if len(f.outcomes) != 1 || f.outcomes[0] != "k1" {
		t.Fatalf("asked for %v, want [k1]", f.outcomes)
	}

	f.outcome = &ringcastv1.GetPublishOutcomeResponse{RememberedSince: timestamppb.New(since)}
	o, err = c.Outcome(context.Background(), "k2")
	if err != nil {
		t.Fatal(err)
	}
	if o.Applied || o.Receipt != nil || !o.RememberedSince.Equal(since) {
		t.Fatalf("outcome %+v, want not applied since %v", o, since)
	}
}

var lost = connect.NewError(connect.CodeUnavailable, errors.New("connection lost"))

// The receipt of the first attempt is lost; the outcome says applied:
// Commit returns the original receipt as a duplicate after one publish.
func TestCommitOutcomeCheckApplied(t *testing.T) {
	f := &fakeService{publishErrs: []error{lost}, outcome: &ringcastv1.GetPublishOutcomeResponse{Applied: true, Receipt: receipt, RememberedSince: timestamppb.Now()}}
	c := fakeClient(t, f)
	r, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a", Type: "t"}}, ringcast.WithIdempotencyKey("k"), ringcast.WithOutcomeCheck())
	if err != nil {
		t.Fatal(err)
	}
	if r.GetSeq() != 7 || !r.GetDuplicate() || !r.GetEventTime().AsTime().Equal(receipt.EventTime.AsTime()) {
		t.Fatalf("receipt %v, want seq 7 as a duplicate with the original event time", r)
	}
	if f.publishes != 1 || len(f.outcomes) != 1 || f.outcomes[0] != "k" {
		t.Fatalf("%d publishes, outcome reads %v; want 1 publish and one read of k", f.publishes, f.outcomes)
	}
}

// Not applied, or an outcome read that fails: Commit publishes again.
func TestCommitOutcomeCheckRetries(t *testing.T) {
	for name, outcome := range map[string]*ringcastv1.GetPublishOutcomeResponse{
		"not applied":   {RememberedSince: timestamppb.Now()},
		"unimplemented": nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeService{publishErrs: []error{lost, lost}, outcome: outcome}
			c := fakeClient(t, f)
			r, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a", Type: "t"}}, ringcast.WithOutcomeCheck())
			if err != nil {
				t.Fatal(err)
			}
			if f.publishes != 3 || len(f.outcomes) != 2 || r.GetSeq() != 7 {
				t.Fatalf("%d publishes, %d outcome reads, receipt %v; want 3 publishes, 2 reads", f.publishes, len(f.outcomes), r)
			}
			if f.outcomes[0] == "" || f.outcomes[0] != f.outcomes[1] {
				t.Fatalf("outcome keys %v: want the generated key each time", f.outcomes)
			}
		})
	}
}

// Without the option, and after a permanent error, there is no outcome read.
func TestCommitWithoutOutcomeCheckReadsNothing(t *testing.T) {
	f := &fakeService{publishErrs: []error{lost}, outcome: &ringcastv1.GetPublishOutcomeResponse{Applied: true, Receipt: receipt}}
	c := fakeClient(t, f)
	if _, err := c.Commit(context.Background(), []*ringcastv1.Fact{{Topic: "a", Type: "t"}}); err != nil {
		t.Fatal(err)
	}
	if f.publishes != 2 || len(f.outcomes) != 0 {
		t.Fatalf("%d publishes, %d outcome reads; want 2 and none", f.publishes, len(f.outcomes))
	}
	f = &fakeService{publishErrs: []error{connect.NewError(connect.CodeInvalidArgument, errors.New("bad"))}, outcome: &ringcastv1.GetPublishOutcomeResponse{Applied: true, Receipt: receipt}}
	c = fakeClient(t, f)
	if _, err := c.Commit(context.Background(), nil, ringcast.WithOutcomeCheck()); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("err %v, want invalid_argument", err)
	}
	if f.publishes != 1 || len(f.outcomes) != 0 {
		t.Fatalf("%d publishes, %d outcome reads after a permanent error; want 1 and none", f.publishes, len(f.outcomes))
	}
}

// subscribeRequests ranges over a subscription until it sends one request
// beyond f's streams, and returns every request it sent.
func subscribeRequests(t *testing.T, f *fakeService, opts ...ringcast.SubscribeOption) []*ringcastv1.SubscribeEventsRequest {
	t.Helper()
	f.extra = make(chan struct{}, 1)
	c := fakeClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // hang guard
	defer cancel()
	go func() {
		select {
		case <-f.extra:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, err := range c.Subscribe(opts...).Items(ctx) {
		if err != nil {
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) != len(f.streams)+1 {
		t.Fatalf("%d requests, want %d", len(f.subs), len(f.streams)+1)
	}
	return f.subs
}

func TestSinceTimeOnlyWithoutAPosition(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commit := &ringcastv1.SubscribeEventsResponse{Seq: 3, InstanceEpoch: 0x1234, Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{FactCount: 1, Facts: []*ringcastv1.Fact{{Topic: "a", Type: "t"}}}}}
	caughtUp := &ringcastv1.SubscribeEventsResponse{InstanceEpoch: 0x1234, Event: &ringcastv1.SubscribeEventsResponse_CaughtUp{CaughtUp: &ringcastv1.CaughtUp{HeadSeq: 2}}}

	t.Run("a stream that ends before any position keeps the time", func(t *testing.T) {
		reqs := subscribeRequests(t, &fakeService{streams: [][]*ringcastv1.SubscribeEventsResponse{{caughtUp}}}, ringcast.WithSinceTime(at))
		for i, r := range reqs {
			if !r.GetSinceTime().AsTime().Equal(at) || r.GetSinceSeq() != 0 {
				t.Errorf("request %d: since_time %v since_seq %d, want %v and 0", i, r.GetSinceTime(), r.GetSinceSeq(), at)
			}
		}
	})
	t.Run("a position replaces the time", func(t *testing.T) {
		reqs := subscribeRequests(t, &fakeService{streams: [][]*ringcastv1.SubscribeEventsResponse{{commit}}}, ringcast.WithSinceTime(at))
		if !reqs[0].GetSinceTime().AsTime().Equal(at) {
			t.Errorf("first request since_time %v, want %v", reqs[0].GetSinceTime(), at)
		}
		if r := reqs[1]; r.SinceTime != nil || r.GetSinceSeq() != 3 || r.GetInstanceEpoch() != 0x1234 {
			t.Errorf("second request %v, want the cursor (3 of epoch 1234) without since_time", r)
		}
	})
	t.Run("a saved cursor wins over the time", func(t *testing.T) {
		reqs := subscribeRequests(t, &fakeService{}, ringcast.WithCursor(ringcast.Cursor{Epoch: 0x1234, Seq: 2}), ringcast.WithSinceTime(at))
		if r := reqs[0]; r.SinceTime != nil || r.GetSinceSeq() != 2 {
			t.Errorf("request %v, want since_seq 2 without since_time", r)
		}
	})
}
