// Package rpc is ringcast's Connect handler: one http.Handler that serves
// EventService to Connect, gRPC and gRPC-Web clients. Validation of request
// shape happens in the protovalidate interceptor (violations travel in the
// error details); the stream contract itself lives in package hub.
package rpc

import (
	"context"
	"math"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/validate"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/stream"
)

// Face is the face's name: the label its streams and refusals carry in
// metrics (hub.Request.Face, the edge's refusals).
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
	return subscribeError(ctx, s.hub.Subscribe(withPeer(ctx, req), hreq, sink))
}

// withPeer is ctx naming the caller's address for the hub's admission
// (hub.ContextWithPeer): every call hands the hub its caller so, and
// checks nothing itself.
func withPeer(ctx context.Context, req connect.AnyRequest) context.Context {
	return hub.ContextWithPeer(ctx, req.Peer().Addr)
}

// Publish appends one commit. The hub admits it through the edge: a
// topic outside the caller's grant is refused, and its key is in the
// caller's key space.
func (s *Service) Publish(ctx context.Context, req *connect.Request[ringcastv1.PublishRequest]) (*connect.Response[ringcastv1.PublishResponse], error) {
	c := hub.Commit{Facts: req.Msg.GetFacts(), IdempotencyKey: req.Msg.GetIdempotencyKey(), Traceparent: traceparent(ctx, req.Header())}
	r, err := s.hub.PublishCommit(withPeer(ctx, req), c)
	if err != nil {
		return nil, publishError(err)
	}
	return connect.NewResponse(receipt(r)), nil
}

// PublishBatch appends several commits in order, all or none (see
// hub.PublishBatch). The validation interceptor has checked every commit's
// shape; the hub admits every commit and checks that every fact is
// deliverable before any append.
func (s *Service) PublishBatch(ctx context.Context, req *connect.Request[ringcastv1.PublishBatchRequest]) (*connect.Response[ringcastv1.PublishBatchResponse], error) {
	in := req.Msg.GetCommits()
	tp := traceparent(ctx, req.Header())
	commits := make([]hub.Commit, len(in))
	for i, c := range in {
		commits[i] = hub.Commit{Facts: c.GetFacts(), IdempotencyKey: c.GetIdempotencyKey(), Traceparent: tp}
	}
	rs, err := s.hub.PublishBatch(withPeer(ctx, req), commits)
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
// its idempotency key. The hub answers in the caller's own key space, and
// a caller who may not subscribe to every topic of the commit gets
// exactly the answer for an unknown key (hub.Outcome).
func (s *Service) GetPublishOutcome(ctx context.Context, req *connect.Request[ringcastv1.GetPublishOutcomeRequest]) (*connect.Response[ringcastv1.GetPublishOutcomeResponse], error) {
	o, err := s.hub.Outcome(withPeer(ctx, req), hub.Key{Name: req.Msg.GetIdempotencyKey()})
	if err != nil {
		return nil, publishError(err)
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
