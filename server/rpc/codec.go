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
	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/offstack"
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
// event once (hub.Event.Encoded) and appends the cached bytes for every
// send; anything else is marshalled normally. It names itself as connect's
// built-in codecs do ("proto", "json", "json; charset=utf-8") and replaces
// them for the handler.
type eventCodec struct {
	name     string
	encoding hub.Encoding
	marshal  func(*ringcastv1.SubscribeEventsResponse) ([]byte, error)
	append   func([]byte, proto.Message) ([]byte, error)
	unmarsh  func([]byte, proto.Message) error
	stable   func(proto.Message) ([]byte, error)
	binary   bool
}

// eventCodecs returns the handler options installing the caching codecs.
func eventCodecs() []connect.HandlerOption {
	return []connect.HandlerOption{
		connect.WithCodec(protoCodec),
		connect.WithCodec(jsonCodec),
		connect.WithCodec(newJSONCodec("json; charset=utf-8")),
	}
}

// The handler's codecs for binary and JSON messages. They are stateless;
// streams writing cached envelopes directly use the same ones (sink.go).
var (
	protoCodec = newProtoCodec()
	jsonCodec  = newJSONCodec("json")
)

func newProtoCodec() *eventCodec {
	return &eventCodec{
		name:     "proto",
		encoding: hub.EncodingProto,
		marshal:  framed(proto.MarshalOptions{}.MarshalAppend),
		append:   proto.MarshalOptions{}.MarshalAppend,
		unmarsh:  proto.Unmarshal,
		stable:   proto.MarshalOptions{Deterministic: true}.Marshal,
		binary:   true,
	}
}

func newJSONCodec(name string) *eventCodec {
	return &eventCodec{
		name:     name,
		encoding: hub.EncodingJSON,
		marshal:  framed(offStack(protojson.MarshalOptions{}.MarshalAppend)),
		append:   offStack(protojson.MarshalOptions{}.MarshalAppend),
		// Strict: a JSON request with an unknown field or enum name (a
		// typo such as "idempotency_Key" or "SNAPSHOT_FOO") fails with
		// invalid_argument naming it, instead of silently meaning
		// something else. Binary requests keep ignoring unknown fields,
		// for forward compatibility (docs/limits.md).
		unmarsh: protojson.UnmarshalOptions{}.Unmarshal,
		stable:  protojson.MarshalOptions{}.Marshal,
	}
}

// offStack runs a JSON marshal by offstack.Run. protojson's encoder is
// deep: run on a stream's goroutine, the first control message or event
// it encoded would grow that goroutine's stack to 16 KiB for the rest of
// the stream's life (package offstack). Binary marshalling is shallow and
// runs in place.
func offStack(marshal func([]byte, proto.Message) ([]byte, error)) func([]byte, proto.Message) ([]byte, error) {
	return func(dst []byte, m proto.Message) ([]byte, error) {
		var b []byte
		err := offstack.Run(func() error {
			var err error
			b, err = marshal(dst, m)
			return err
		})
		return b, err
	}
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
// the encoding, cached on the event (one slot per codec). Connect, gRPC and
// gRPC-Web frame a data message alike, so the bytes serve all three.
func (c *eventCodec) envelope(ev *hub.Event) ([]byte, error) {
	return ev.Encoded(c.encoding, c.marshal)
}

// envelopePrefix is the length of a stream message's envelope prefix.
const envelopePrefix = 5

// framed returns a marshal function for Event.Encoded building the
// enveloped form of a response with appendMsg.
func framed(appendMsg func([]byte, proto.Message) ([]byte, error)) func(*ringcastv1.SubscribeEventsResponse) ([]byte, error) {
	return func(r *ringcastv1.SubscribeEventsResponse) ([]byte, error) {
		b, err := appendMsg(make([]byte, envelopePrefix, envelopePrefix+128), r)
		if err != nil {
			return nil, err
		}
		n := len(b) - envelopePrefix
		if uint64(n) > math.MaxUint32 {
			return nil, fmt.Errorf("rpc: message of %d bytes is too large for an envelope", n)
		}
		binary.BigEndian.PutUint32(b[1:envelopePrefix], uint32(n))
		return b, nil
	}
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
