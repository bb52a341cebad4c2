package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/eventjson"
	"github.com/ringcast/ringcast/server/internal/face/offstack"
)

// sharedEvent carries a hub event through connect's Send to the codec, so
// the codec can write the event's cached encoding instead of marshalling its
// response again for every subscriber. It embeds the response, so it is a
// proto.Message that marshals to exactly those bytes: any codec or
// interceptor that does not know it still handles it correctly.
type sharedEvent struct {
	*ringcastv1.SubscribeEventsResponse
	ev *hub.Event
}

// eventCodec is a protobuf codec (binary or JSON) that encodes each shared
// event once, caches the envelope on the event (its slot, hub.Event.Cache)
// and appends the cached bytes for every send; anything else is marshalled
// normally. It names itself as connect's
// built-in codecs do ("proto", "json", "json; charset=utf-8") and replaces
// them for the handler.
type eventCodec struct {
	name    string
	slot    hub.Slot // where its envelopes are cached on an event
	marshal func(*ringcastv1.SubscribeEventsResponse, int) ([]byte, error)
	append  func([]byte, proto.Message) ([]byte, error)
	unmarsh func([]byte, proto.Message) error
	stable  func(proto.Message) ([]byte, error)
	binary  bool
}

// eventCodecs returns the handler options installing the caching codecs.
func eventCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(protoCodec),
		connect.WithCodec(jsonCodec),
		connect.WithCodec(newJSONCodec("json; charset=utf-8")),
	}
}

// The events' cache slots of the face's two encodings: the enveloped
// binary and the enveloped JSON of an event's shared response. Every JSON
// codec (both names) shares the JSON slot.
var (
	protoSlot = hub.NewSlot()
	jsonSlot  = hub.NewSlot()
)

// The handler's codecs for binary and JSON messages. They are stateless;
// streams writing cached envelopes directly use the same ones (sink.go).
var (
	protoCodec = newProtoCodec()
	jsonCodec  = newJSONCodec("json")
)

func newProtoCodec() *eventCodec {
	return &eventCodec{
		name:    "proto",
		slot:    protoSlot,
		marshal: framed(appendProto, func(size int) int { return size }),
		append:  appendProto,
		unmarsh: proto.Unmarshal,
		stable:  proto.MarshalOptions{Deterministic: true}.Marshal,
		binary:  true,
	}
}

func newJSONCodec(name string) *eventCodec {
	return &eventCodec{
		name:    name,
		slot:    jsonSlot,
		marshal: framed(appendJSON, eventjson.SizeHint),
		append:  appendJSON,
		// Strict: a JSON request with an unknown field or enum name (a
		// typo such as "idempotency_Key" or "SNAPSHOT_FOO") fails with
		// invalid_argument naming it, instead of silently meaning
		// something else. Binary requests keep ignoring unknown fields,
		// for forward compatibility (docs/limits.md).
		unmarsh: unmarshalJSON,
		stable:  protojson.MarshalOptions{}.Marshal,
	}
}

// appendJSON appends m's protobuf JSON. A stream's commits and progress
// are written by package eventjson, in place; its other messages by
// protojson, whose encoder is deep, on a helper goroutine: run on a
// stream's goroutine, it would grow that goroutine's stack to 16 KiB for
// the rest of the stream's life (package offstack). Unary responses are
// marshalled in place, as their requests are unmarshalled: their
// goroutine's stack is not kept by a stream. Publish receipts, one per
// commit published, are written by package eventjson too.
func appendJSON(dst []byte, m proto.Message) ([]byte, error) {
	switch r := m.(type) {
	case *ringcastv1.SubscribeEventsResponse:
		if b, ok := eventjson.OnStack.Append(dst, r); ok {
			return b, nil
		}
		return offStack(protojson.MarshalOptions{}.MarshalAppend, dst, m)
	case *ringcastv1.PublishResponse:
		if b, ok := eventjson.AppendReceipt(dst, r); ok {
			return b, nil
		}
	case *ringcastv1.PublishBatchResponse:
		if b, ok := eventjson.AppendReceipts(dst, r); ok {
			return b, nil
		}
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, m)
}

// unmarshalJSON decodes a request's protobuf JSON. Publish and
// PublishBatch requests take package eventjson's decoder, which declines
// anything unusual; protojson decodes the rest, and everything declined, so
// what is valid and how an error reads is protojson's alone.
func unmarshalJSON(b []byte, m proto.Message) error {
	switch m := m.(type) {
	case *ringcastv1.PublishRequest:
		if eventjson.UnmarshalPublish(b, m) {
			return nil
		}
	case *ringcastv1.PublishBatchRequest:
		if eventjson.UnmarshalPublishBatch(b, m) {
			return nil
		}
	}
	return protojson.UnmarshalOptions{}.Unmarshal(b, m)
}

// appendProto appends m's binary encoding. Binary marshalling is shallow,
// but not through a struct payload (Struct, Value and ListValue are nested
// messages, each level a few frames): a stream's response holding one is
// marshalled on a helper goroutine, as in appendJSON.
func appendProto(dst []byte, m proto.Message) ([]byte, error) {
	if r, ok := m.(*ringcastv1.SubscribeEventsResponse); ok && hasStructData(r) {
		return offStack(proto.MarshalOptions{}.MarshalAppend, dst, m)
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, m)
}

// hasStructData reports whether a response is a commit with a fact whose
// payload is structured data.
func hasStructData(r *ringcastv1.SubscribeEventsResponse) bool {
	for _, f := range r.GetCommit().GetFacts() {
		if f.GetData() != nil {
			return true
		}
	}
	return false
}

// offStack runs marshal by offstack.Run.
func offStack(marshal func([]byte, proto.Message) ([]byte, error), dst []byte, m proto.Message) ([]byte, error) {
	var b []byte
	err := offstack.Run(func() error {
		var err error
		b, err = marshal(dst, m)
		return err
	})
	return b, err
}

func (c *eventCodec) Name() string { return c.name }

// Marshal returns a new slice (connect may recycle what Marshal returns, so
// the cached bytes are copied, never handed out).
func (c *eventCodec) Marshal(msg any) ([]byte, error) { return c.MarshalAppend(nil, msg) }

// MarshalAppend appends msg's encoding to dst: a copy of the cached bytes
// for a shared event, a normal marshal otherwise.
func (c *eventCodec) MarshalAppend(dst []byte, msg any) ([]byte, error) {
	if se, ok := msg.(*sharedEvent); ok {
		b, err := c.envelope(se.ev)
		if err != nil {
			return nil, err
		}
		return append(dst, b[envelopePrefix:]...), nil
	}
	m, ok := msg.(proto.Message)
	if !ok {
		return nil, errNotProto(msg)
	}
	return c.append(dst, m)
}

// envelope is ev's shared response as one stream message: the 5-byte
// envelope prefix (flags 0: uncompressed data; the length, big-endian) and
// the encoding, cached on the event (the codec's slot): read from the
// cache, or built here and handed to it. Connect, gRPC and gRPC-Web frame
// a data message alike, so the bytes serve all three.
func (c *eventCodec) envelope(ev *hub.Event) ([]byte, error) {
	if b := ev.Cached(c.slot); b != nil {
		return b, nil
	}
	return c.cache(ev)
}

// cache builds ev's envelope and hands it to the event's cache (kept apart
// from envelope so that the cached case inlines into its callers).
func (c *eventCodec) cache(ev *hub.Event) ([]byte, error) {
	b, err := c.marshal(ev.Response(), ev.ProtoSize())
	if err != nil {
		return nil, err
	}
	return ev.Cache(c.slot, b), nil
}

// envelopePrefix is the length of a stream message's envelope prefix.
const envelopePrefix = 5

// framed returns a marshal function for envelope building the
// enveloped form of a response with appendMsg, in a buffer of capacity
// for a message of msgCap(size) bytes when the response's protobuf
// encoding is size bytes.
func framed(appendMsg func([]byte, proto.Message) ([]byte, error), msgCap func(size int) int) func(*ringcastv1.SubscribeEventsResponse, int) ([]byte, error) {
	return func(r *ringcastv1.SubscribeEventsResponse, size int) ([]byte, error) {
		return appendEnvelope(make([]byte, 0, envelopePrefix+msgCap(size)), r, appendMsg)
	}
}

// appendEnvelope appends r as one stream message (envelope prefix and
// encoding by appendMsg) to dst; on error dst is returned as it was.
func appendEnvelope(dst []byte, r *ringcastv1.SubscribeEventsResponse, appendMsg func([]byte, proto.Message) ([]byte, error)) ([]byte, error) {
	start := len(dst)
	b, err := appendMsg(append(dst, 0, 0, 0, 0, 0), r)
	if err != nil {
		return dst[:start], err
	}
	n := len(b) - start - envelopePrefix
	if uint64(n) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("rpc: message of %d bytes is too large for an envelope", n)
	}
	binary.BigEndian.PutUint32(b[start+1:start+envelopePrefix], uint32(n))
	return b, nil
}

func (c *eventCodec) Unmarshal(data []byte, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return errNotProto(msg)
	}
	if err := c.unmarsh(data, m); err != nil {
		// The client sees this message: name the problem, not the Go
		// type it was decoded into.
		return fmt.Errorf("malformed request message: %s", strings.TrimPrefix(err.Error(), "proto: "))
	}
	return nil
}

// MarshalStable and IsBinary keep the optional interface of connect's
// built-in codecs (used for GET requests).
func (c *eventCodec) MarshalStable(msg any) ([]byte, error) {
	if se, ok := msg.(*sharedEvent); ok {
		msg = se.SubscribeEventsResponse
	}
	m, ok := msg.(proto.Message)
	if !ok {
		return nil, errNotProto(msg)
	}
	return c.stable(m)
}

func (c *eventCodec) IsBinary() bool { return c.binary }

func errNotProto(msg any) error {
	return errors.New("rpc: " + fmt.Sprintf("%T", msg) + " is not a proto.Message")
}
