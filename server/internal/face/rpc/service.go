// Package rpc is ringcast's Connect handler: one http.Handler that serves
// EventService to Connect, gRPC and gRPC-Web clients. Validation of request
// shape happens in the protovalidate interceptor (violations travel in the
// error details); the stream contract itself lives in package hub.
package rpc

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/validate"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/face/stream"
)

// Face is the face's name: the label its streams and refusals carry in
// metrics (hub.Request.Face, auth's refusals).
const Face = "connect"

// Service implements ringcastv1connect.EventServiceHandler over a hub.
type Service struct {
	hub *hub.Hub
}

var _ ringcastv1connect.EventServiceHandler = (*Service)(nil)

// NewHandler returns the EventService route and handler. maxRequestBytes
// bounds every request message (Publish's facts above all). Interceptors in
// opts wrap the built-in validation, so they see the requests it rejects.
//
// Responses are never compressed: a stream's events are shared by every
// subscriber, and compressing them once per subscriber would multiply the
// fan-out cost. Compressed requests are still accepted. For the same reason
// each event is encoded once per codec and the bytes are shared by every
// stream that sends it unchanged (see codec.go).
func NewHandler(h *hub.Hub, maxRequestBytes int, opts ...connect.HandlerOption) (string, http.Handler) {
	all := append([]connect.HandlerOption{}, opts...) // first: their interceptors are outermost
	all = append(all,
		connect.WithInterceptors(validate.NewInterceptor(), receiveOffStack{}), // innermost (offstack.go)
		connect.WithReadMaxBytes(maxRequestBytes),
		connect.WithCompressMinBytes(math.MaxInt),
	)
	all = append(all, eventCodecs()...)
	path, handler := ringcastv1connect.NewEventServiceHandler(&Service{hub: h}, all...)
	return path, withBatchWriter(stream.Paths(ringcastv1.File_ringcast_v1_ringcast_proto.Services().ByName("EventService")), handler)
}

// SubscribeEvents serves one stream. Unservable cursors are not errors: the
// hub answers them with ResyncRequired (or Gap) and the stream ends OK.
func (s *Service) SubscribeEvents(ctx context.Context, req *connect.Request[ringcastv1.SubscribeEventsRequest], stream *connect.ServerStream[ringcastv1.SubscribeEventsResponse]) error {
	sink := newStreamSink(stream.Conn(), batchWriterFrom(ctx))
	if sink.batch != nil {
		sink.batch.hold = true
		defer func() { sink.batch.hold = false }()
	}
	hreq, err := hub.RequestFromProto(Face, req.Msg)
	if err != nil {
		return publishError(err)
	}
	// The hub admits the stream through the edge (hub.Config.Admit): its
	// topics and end are the caller's token's, and a refusal comes back
	// as the edge's error (subscribeError).
	return subscribeError(ctx, s.hub.Subscribe(ctx, hreq, sink))
}

// Publish appends one commit.
func (s *Service) Publish(ctx context.Context, req *connect.Request[ringcastv1.PublishRequest]) (*connect.Response[ringcastv1.PublishResponse], error) {
	if err := auth.CheckPublish(ctx, req.Msg.GetFacts()); err != nil {
		return nil, authError(err)
	}
	c := hub.Commit{Facts: req.Msg.GetFacts(), IdempotencyKey: req.Msg.GetIdempotencyKey(), Traceparent: traceparent(ctx, req.Header())}
	pctx := ctx
	if c.IdempotencyKey != "" {
		c.Publisher = auth.Publisher(ctx)
		// Its new key takes from its client's share of the dedupe table.
		pctx = hub.ContextWithClient(ctx, auth.ClientID(ctx, req.Peer().Addr))
	}
	r, err := s.hub.PublishCommit(pctx, c)
	if err != nil {
		return nil, publishError(err)
	}
	return connect.NewResponse(receipt(r)), nil
}

// PublishBatch appends several commits in order, all or none (see
// hub.PublishBatch). The validation interceptor has checked every commit's
// shape; the hub checks that every fact is deliverable before any append.
func (s *Service) PublishBatch(ctx context.Context, req *connect.Request[ringcastv1.PublishBatchRequest]) (*connect.Response[ringcastv1.PublishBatchResponse], error) {
	in := req.Msg.GetCommits()
	tp := traceparent(ctx, req.Header())
	commits := make([]hub.Commit, len(in))
	for i, c := range in {
		if err := auth.CheckPublish(ctx, c.GetFacts()); err != nil {
			return nil, authError(fmt.Errorf("commits[%d].%w", i, err))
		}
		commits[i] = hub.Commit{Facts: c.GetFacts(), IdempotencyKey: c.GetIdempotencyKey(), Traceparent: tp}
	}
	publisher := auth.Publisher(ctx)
	client := false
	for i := range commits {
		if commits[i].IdempotencyKey != "" {
			commits[i].Publisher = publisher
			client = true
		}
	}
	if client {
		ctx = hub.ContextWithClient(ctx, auth.ClientID(ctx, req.Peer().Addr))
	}
	rs, err := s.hub.PublishBatch(ctx, commits)
	if err != nil {
		return nil, publishError(err)
	}
	out := make([]*ringcastv1.PublishResponse, len(rs))
	msgs := make([]receiptMsg, len(rs))
	for i, r := range rs {
		out[i] = msgs[i].set(r)
	}
	return connect.NewResponse(&ringcastv1.PublishBatchResponse{Receipts: out}), nil
}

// receiptMsg is a receipt and its timestamp, allocated together.
type receiptMsg struct {
	resp ringcastv1.PublishResponse
	time timestamppb.Timestamp
}

func receipt(r hub.Receipt) *ringcastv1.PublishResponse { return new(receiptMsg).set(r) }

// set makes m r's receipt and returns it.
func (m *receiptMsg) set(r hub.Receipt) *ringcastv1.PublishResponse {
	m.time.Seconds, m.time.Nanos = r.Time.Unix(), int32(r.Time.Nanosecond())
	m.resp.Seq, m.resp.InstanceEpoch, m.resp.EventTime, m.resp.Duplicate = r.Seq, r.Epoch, &m.time, r.Duplicate
	return &m.resp
}

// GetPublishOutcome reads, without writing, what became of a publish by
// its idempotency key in the caller's own key space (hub.Outcome,
// auth.Publisher). A caller who may not subscribe to every topic of the
// commit gets exactly the answer for an unknown key.
func (s *Service) GetPublishOutcome(ctx context.Context, req *connect.Request[ringcastv1.GetPublishOutcomeRequest]) (*connect.Response[ringcastv1.GetPublishOutcomeResponse], error) {
	o, err := s.hub.Outcome(ctx, hub.Key{Publisher: auth.Publisher(ctx), Name: req.Msg.GetIdempotencyKey()})
	if err != nil {
		return nil, publishError(err)
	}
	if o.Applied && !auth.MaySubscribeAll(ctx, o.Topics) {
		o = o.Unknown()
	}
	res := &ringcastv1.GetPublishOutcomeResponse{Applied: o.Applied, RememberedSince: timestamppb.New(o.RememberedSince)}
	if o.Applied {
		res.Receipt = receipt(o.Receipt)
	}
	return connect.NewResponse(res), nil
}

// GetServerStatus reports the running instance.
func (s *Service) GetServerStatus(context.Context, *connect.Request[ringcastv1.GetServerStatusRequest]) (*connect.Response[ringcastv1.GetServerStatusResponse], error) {
	return connect.NewResponse(&ringcastv1.GetServerStatusResponse{
		Status:      s.hub.Status(),
		Subscribers: uint64(s.hub.Subscribers()),
	}), nil
}
