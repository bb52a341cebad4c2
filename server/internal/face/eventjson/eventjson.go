// Package eventjson reads and writes, without reflection, the protobuf
// JSON of the messages on ringcast's hot paths: the commits and progress a
// stream sends, and the Publish and PublishBatch requests publishers send
// and the receipts they get back.
//
// Writing, the output is byte for byte what protojson.Marshal gives,
// compacted (docs/protocol.md: lowerCamel names in declaration order,
// 64-bit integers as strings, RFC 3339 times with 0, 3, 6 or 9 fractional
// digits, struct keys sorted, bytes in padded standard base64). Anything
// else — another kind of response, a value protojson would refuse, a
// payload nested deeper than the caller allows — is left to protojson:
// Append says so and writes nothing. A shared event is encoded once for
// all its streams, but protojson's reflection made that encoding the
// largest part of a lone subscriber's cost per event, and its deep call
// chains had to run on a helper goroutine (package offstack); this encoder
// is shallow enough to run on the stream's own stack.
//
// Reading (decode.go), the decoders accept a subset of what protojson
// accepts and decode it to the same message; they decline the rest, which
// the caller hands to protojson.
package eventjson

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// SizeHint is a buffer capacity that usually holds the JSON of a response
// whose protobuf encoding is size bytes, so that encoding it seldom
// copies: JSON spells out field names and a timestamp that protobuf packs
// in a few bytes (a commit of one fact takes about 150 bytes more in
// JSON), and strings take about as many bytes in both. Data of many small
// numbers takes less room in JSON (a byte or two against nine), and its
// buffer more than it needs: hub.Event.Cache clips what it keeps.
func SizeHint(size int) int { return size + size/8 + 160 }

// Options say what Append writes.
type Options struct {
	// MaxDepth is how deeply a fact's data may nest structs and lists for
	// Append to encode it: the data object itself is depth 1. Deeper data
	// is left to the caller (protojson on a helper goroutine), which keeps
	// this encoder's stack use small and bounded.
	MaxDepth int
	// OmitPosition leaves out seq, instanceEpoch and fingerprint, for a
	// face that carries them elsewhere (the SSE id).
	OmitPosition bool
}

// OnStack is for encoding on a long-lived stream goroutine's own stack.
// A parked stream's goroutine has 8 KiB of stack, of which the HTTP server,
// the handler chain and the write path leave little: each level of
// nesting costs this encoder ~360 bytes, and data nested two levels deep
// (a gauge's reading, an object of objects) fits with a level to spare.
// TestIdleStreamStacks in server/internal/face/rpc and server/internal/face/sse checks it.
var OnStack = Options{MaxDepth: 2}

// Append appends r's protobuf JSON to dst. It returns dst unchanged and
// false when r is not a commit or progress response, or holds something
// this encoder leaves to protojson (see the package comment).
func (o Options) Append(dst []byte, r *ringcastv1.SubscribeEventsResponse) ([]byte, bool) {
	start := len(dst)
	out, ok := o.appendResponse(dst, r)
	if !ok {
		return dst[:start], false
	}
	return out, true
}

func (o Options) appendResponse(b []byte, r *ringcastv1.SubscribeEventsResponse) ([]byte, bool) {
	var ok bool
	w := writer{b: append(b, '{')}
	if !o.OmitPosition {
		w.position(r.Seq, r.InstanceEpoch)
	}
	if !w.timestamp("eventTime", r.EventTime) {
		return nil, false
	}
	if r.Fingerprint != 0 && !o.OmitPosition {
		w.name("fingerprint")
		w.b = strconv.AppendUint(w.b, uint64(r.Fingerprint), 10)
	}
	switch e := r.Event.(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit:
		w.name("commit")
		if e.Commit == nil {
			w.b = append(w.b, "{}"...)
			break
		}
		if w.b, ok = o.appendCommit(w.b, e.Commit); !ok {
			return nil, false
		}
	case *ringcastv1.SubscribeEventsResponse_Progress:
		// Progress has no fields (an unknown field would not be written).
		w.name("progress")
		w.b = append(w.b, "{}"...)
	default:
		return nil, false
	}
	return append(w.b, '}'), true
}

// AppendReceipt appends a Publish receipt's protobuf JSON to dst. It
// returns dst unchanged and false when r holds a time protojson would
// refuse.
func AppendReceipt(dst []byte, r *ringcastv1.PublishResponse) ([]byte, bool) {
	out, ok := appendReceipt(dst, r)
	if !ok {
		return dst, false
	}
	return out, true
}

// AppendReceipts appends a PublishBatch response's protobuf JSON to dst,
// as AppendReceipt does.
func AppendReceipts(dst []byte, r *ringcastv1.PublishBatchResponse) ([]byte, bool) {
	w := writer{b: append(dst, '{')}
	if len(r.Receipts) > 0 {
		w.name("receipts")
		w.b = append(w.b, '[')
		for i, rc := range r.Receipts {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			var ok bool
			if w.b, ok = appendReceipt(w.b, rc); !ok {
				return dst, false
			}
		}
		w.b = append(w.b, ']')
	}
	return append(w.b, '}'), true
}

func appendReceipt(b []byte, r *ringcastv1.PublishResponse) ([]byte, bool) {
	w := writer{b: append(b, '{')}
	if r != nil {
		w.position(r.Seq, r.InstanceEpoch)
		if !w.timestamp("eventTime", r.EventTime) {
			return nil, false
		}
		if r.Duplicate {
			w.name("duplicate")
			w.b = append(w.b, "true"...)
		}
	}
	return append(w.b, '}'), true
}

func (o Options) appendCommit(b []byte, c *ringcastv1.Commit) ([]byte, bool) {
	var ok bool
	w := writer{b: append(b, '{')}
	if len(c.Facts) > 0 {
		w.name("facts")
		w.b = append(w.b, '[')
		for i, f := range c.Facts {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if f == nil {
				w.b = append(w.b, "{}"...)
				continue
			}
			if w.b, ok = o.appendFact(w.b, f); !ok {
				return nil, false
			}
		}
		w.b = append(w.b, ']')
	}
	if c.FactCount != 0 {
		w.name("factCount")
		w.b = strconv.AppendUint(w.b, uint64(c.FactCount), 10)
	}
	if c.Traceparent != "" {
		w.name("traceparent")
		if w.b, ok = appendString(w.b, c.Traceparent); !ok {
			return nil, false
		}
	}
	return append(w.b, '}'), true
}

func (o Options) appendFact(b []byte, f *ringcastv1.Fact) ([]byte, bool) {
	var ok bool
	w := writer{b: append(b, '{')}
	if f.Index != 0 {
		w.name("index")
		w.b = strconv.AppendUint(w.b, uint64(f.Index), 10)
	}
	for _, s := range [...]struct{ name, v string }{{"topic", f.Topic}, {"type", f.Type}, {"key", f.Key}} {
		if s.v != "" {
			w.name(s.name)
			if w.b, ok = appendString(w.b, s.v); !ok {
				return nil, false
			}
		}
	}
	switch p := f.Payload.(type) {
	case nil:
	case *ringcastv1.Fact_Data:
		w.name("data")
		if w.b, ok = appendStruct(w.b, p.Data, o.MaxDepth-1); !ok {
			return nil, false
		}
	case *ringcastv1.Fact_BinaryData:
		// A oneof member is written when set, even when empty.
		w.name("binaryData")
		w.b = append(w.b, '"')
		w.b = base64.StdEncoding.AppendEncode(w.b, p.BinaryData)
		w.b = append(w.b, '"')
	default:
		return nil, false
	}
	if f.ContentType != "" {
		w.name("contentType")
		if w.b, ok = appendString(w.b, f.ContentType); !ok {
			return nil, false
		}
	}
	return append(w.b, '}'), true
}

// appendStruct writes a google.protobuf.Struct as a JSON object with its
// keys sorted; depth is how many more levels may be opened below it.
func appendStruct(b []byte, s *structpb.Struct, depth int) ([]byte, bool) {
	if depth < 0 {
		return nil, false
	}
	if s == nil || len(s.Fields) == 0 {
		return append(b, "{}"...), true
	}
	var ok bool
	b = append(b, '{')
	for i, k := range sortedKeys(s.Fields) {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendString(b, k); !ok {
			return nil, false
		}
		b = append(b, ':')
		if b, ok = appendValue(b, s.Fields[k], depth); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// sortedKeys returns m's keys in order. Not inlined, so that the sort's
// frames are gone before appendStruct recurses.
//
//go:noinline
func sortedKeys(m map[string]*structpb.Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendValue writes a google.protobuf.Value; protojson refuses a value
// without a kind and a number that is NaN or infinite, and so does this.
func appendValue(b []byte, v *structpb.Value, depth int) ([]byte, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return append(b, "null"...), true
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), true
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue)
	case *structpb.Value_NumberValue:
		return appendNumber(b, k.NumberValue)
	case *structpb.Value_StructValue:
		return appendStruct(b, k.StructValue, depth-1)
	case *structpb.Value_ListValue:
		if depth-1 < 0 {
			return nil, false
		}
		var ok bool
		b = append(b, '[')
		for i, e := range k.ListValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, e, depth-1); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	}
	return nil, false
}

// appendNumber writes a double as protojson does (encoding/json's rules:
// the shortest representation, an exponent below 1e-6 and from 1e21).
func appendNumber(b []byte, n float64) ([]byte, bool) {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return nil, false
	}
	f := byte('f')
	if a := math.Abs(n); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	b = strconv.AppendFloat(b, n, f, -1, 64)
	if f == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendString writes s as a JSON string, escaping as protojson does:
// '"', '\\' and control characters only (\b \f \n \r \t by name, the
// others as \u00XX). Invalid UTF-8 is refused, as protojson refuses it.
func appendString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		i++
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= ' ':
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	return append(b, '"'), true
}

// The range of a google.protobuf.Timestamp: 0001-01-01 to 9999-12-31.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// appendTimestamp writes a Timestamp as protojson does: RFC 3339 in UTC,
// with 0, 3, 6 or 9 fractional digits.
func appendTimestamp(b []byte, secs int64, nanos int32) ([]byte, bool) {
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
		return nil, false
	}
	b = append(b, '"')
	b = time.Unix(secs, 0).UTC().AppendFormat(b, "2006-01-02T15:04:05")
	if nanos != 0 {
		digits := 9
		for ; digits > 3 && nanos%1000 == 0; digits -= 3 {
			nanos /= 1000
		}
		b = append(b, '.')
		var frac [9]byte
		for i := digits - 1; i >= 0; i-- {
			frac[i] = byte('0' + nanos%10)
			nanos /= 10
		}
		b = append(b, frac[:digits]...)
	}
	return append(b, 'Z', '"'), true
}

func appendQuotedUint(b []byte, v uint64) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, v, 10)
	return append(b, '"')
}

// position writes seq and instanceEpoch, each when set.
func (w *writer) position(seq, epoch uint64) {
	if seq != 0 {
		w.name("seq")
		w.b = appendQuotedUint(w.b, seq)
	}
	if epoch != 0 {
		w.name("instanceEpoch")
		w.b = appendQuotedUint(w.b, epoch)
	}
}

// timestamp writes a Timestamp member when t is set. It reports false for
// a time protojson refuses.
func (w *writer) timestamp(name string, t *timestamppb.Timestamp) bool {
	if t == nil {
		return true
	}
	w.name(name)
	var ok bool
	w.b, ok = appendTimestamp(w.b, t.Seconds, t.Nanos)
	return ok
}

// writer writes an object's members, a comma before all but the first.
type writer struct {
	b     []byte
	comma bool
}

// name writes a member's name (a field name, never in need of escaping).
func (w *writer) name(n string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, '"', ':')
}
