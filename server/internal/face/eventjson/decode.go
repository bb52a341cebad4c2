package eventjson

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// UnmarshalPublish decodes a Publish request's protobuf JSON into m, as
// protojson.Unmarshal (strict: no unknown field) would, for the requests
// publishers send: field names in lowerCamel or as in the proto, strings
// with any escape but a surrogate, decimal indexes, base64 in each form
// protojson reads, and any struct payload. It
// returns false, leaving m in an unspecified state, for anything else —
// input protojson refuses as well as spellings it accepts but this decoder
// does not (null fields, quoted numbers, surrogate escapes, deep nesting);
// the caller then decodes with protojson, which has the last word on what
// is valid and how it is reported.
func UnmarshalPublish(b []byte, m *ringcastv1.PublishRequest) bool {
	d := decoder{b: b}
	return d.publish(m) && d.end()
}

// UnmarshalPublishBatch is UnmarshalPublish for a PublishBatch request.
func UnmarshalPublishBatch(b []byte, m *ringcastv1.PublishBatchRequest) bool {
	d := decoder{b: b}
	m.Reset()
	ok := d.object(func(name string) bool {
		if name != "commits" {
			return false
		}
		return d.array(func() bool {
			c := &ringcastv1.PublishRequest{}
			m.Commits = append(m.Commits, c)
			return d.publish(c)
		})
	})
	return ok && d.end()
}

// maxDepth bounds the nesting this decoder follows; deeper input is left
// to protojson.
const maxDepth = 64

// decoder reads JSON from b at i. Every method returns false to decline.
type decoder struct {
	b     []byte
	i     int
	depth int
}

func (d *decoder) publish(m *ringcastv1.PublishRequest) bool {
	m.Reset()
	return d.object(func(name string) bool {
		switch name {
		case "facts":
			return d.array(func() bool {
				f := &ringcastv1.Fact{}
				m.Facts = append(m.Facts, f)
				return d.fact(f)
			})
		case "idempotencyKey", "idempotency_key":
			return d.str(&m.IdempotencyKey)
		}
		return false
	})
}

func (d *decoder) fact(f *ringcastv1.Fact) bool {
	return d.object(func(name string) bool {
		switch name {
		case "index":
			return d.uint32(&f.Index)
		case "topic":
			return d.str(&f.Topic)
		case "type":
			return d.str(&f.Type)
		case "key":
			return d.str(&f.Key)
		case "contentType", "content_type":
			return d.str(&f.ContentType)
		case "data":
			if f.Payload != nil || d.peek() != '{' {
				return false
			}
			p := new(dataPayload)
			p.d.Data = &p.s
			f.Payload = &p.d
			return d.structInto(&p.s)
		case "binaryData", "binary_data":
			var s string
			if f.Payload != nil || !d.str(&s) {
				return false
			}
			enc := base64.StdEncoding
			if strings.ContainsAny(s, "-_") {
				enc = base64.URLEncoding
			}
			if len(s)%4 != 0 {
				enc = enc.WithPadding(base64.NoPadding)
			}
			b, err := enc.DecodeString(s)
			if err != nil {
				return false
			}
			f.Payload = &ringcastv1.Fact_BinaryData{BinaryData: b}
			return true
		}
		return false
	})
}

// object reads an object of fields, calling member for each field's
// value with its name. A field given twice — including once in each
// spelling — is declined, as protojson refuses it.
func (d *decoder) object(member func(name string) bool) bool {
	var seen uint16
	return d.anyObject(func(name string) bool {
		bit := fieldBit(name)
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return member(name)
	})
}

// fieldBit is a field's bit in object's set of fields seen, the same for
// both spellings of its name; 0 for a name no member accepts.
func fieldBit(name string) uint16 {
	switch name {
	case "facts":
		return 1 << 0
	case "idempotencyKey", "idempotency_key":
		return 1 << 1
	case "commits":
		return 1 << 2
	case "index":
		return 1 << 3
	case "topic":
		return 1 << 4
	case "type":
		return 1 << 5
	case "key":
		return 1 << 6
	case "contentType", "content_type":
		return 1 << 7
	case "data":
		return 1 << 8
	case "binaryData", "binary_data":
		return 1 << 9
	}
	return 0
}

// array reads an array, calling elem for each element.
func (d *decoder) array(elem func() bool) bool { return d.items('[', ']', elem) }

// items reads what open and close enclose, items separated by commas,
// calling item for each.
func (d *decoder) items(open, close byte, item func() bool) bool {
	if !d.enter(open) {
		return false
	}
	if d.skip() == close {
		d.i++
		d.depth--
		return true
	}
	for {
		d.skip()
		if !item() {
			return false
		}
		switch d.skip() {
		case ',':
			d.i++
		case close:
			d.i++
			d.depth--
			return true
		default:
			return false
		}
	}
}

func (d *decoder) enter(c byte) bool {
	if d.skip() != c || d.depth >= maxDepth {
		return false
	}
	d.i++
	d.depth++
	return true
}

// structInto reads an object into s, a google.protobuf.Struct; a key
// given twice is declined (protojson refuses it).
func (d *decoder) structInto(s *structpb.Struct) bool {
	s.Fields = map[string]*structpb.Value{}
	return d.anyObject(func(key string) bool {
		if _, dup := s.Fields[key]; dup {
			return false
		}
		v, ok := d.value()
		s.Fields[key] = v
		return ok
	})
}

// A Value, its kind and a struct's Struct, allocated together: data is
// mostly numbers and strings, and a struct's values are read one by one.
type (
	numberValue struct {
		v structpb.Value
		k structpb.Value_NumberValue
	}
	stringValue struct {
		v structpb.Value
		k structpb.Value_StringValue
	}
	structValue struct {
		v structpb.Value
		k structpb.Value_StructValue
		s structpb.Struct
	}
	// dataPayload is a fact's data.
	dataPayload struct {
		d ringcastv1.Fact_Data
		s structpb.Struct
	}
)

// anyObject reads an object, calling member for each member's value with
// its name (a struct's key, or a field's name for object).
func (d *decoder) anyObject(member func(key string) bool) bool {
	return d.items('{', '}', func() bool {
		var key string
		if d.skip() != '"' || !d.str(&key) || d.skip() != ':' {
			return false
		}
		d.i++
		d.skip()
		return member(key)
	})
}

// value reads any JSON value as a google.protobuf.Value.
func (d *decoder) value() (*structpb.Value, bool) {
	switch c := d.skip(); {
	case c == '{':
		v := new(structValue)
		v.k.StructValue = &v.s
		v.v.Kind = &v.k
		return &v.v, d.structInto(&v.s)
	case c == '[':
		l := &structpb.ListValue{}
		ok := d.array(func() bool {
			v, ok := d.value()
			l.Values = append(l.Values, v)
			return ok
		})
		return structpb.NewListValue(l), ok
	case c == '"':
		v := new(stringValue)
		v.v.Kind = &v.k
		return &v.v, d.str(&v.k.StringValue)
	case c == 't':
		return structpb.NewBoolValue(true), d.literal("true")
	case c == 'f':
		return structpb.NewBoolValue(false), d.literal("false")
	case c == 'n':
		return structpb.NewNullValue(), d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		n, ok := d.number()
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, false
		}
		v := &numberValue{k: structpb.Value_NumberValue{NumberValue: f}}
		v.v.Kind = &v.k
		return &v.v, true
	}
	return nil, false
}

func (d *decoder) literal(s string) bool {
	if !strings.HasPrefix(string(d.b[d.i:min(len(d.b), d.i+len(s))]), s) {
		return false
	}
	d.i += len(s)
	return true
}

// number reads a JSON number (RFC 8259's grammar) and returns its text,
// which is b's.
func (d *decoder) number() ([]byte, bool) {
	start := d.i
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.peek() == '.' {
		d.i++
		if !d.digits() {
			return nil, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !d.digits() {
			return nil, false
		}
	}
	return d.b[start:d.i], true
}

// digits reads one or more decimal digits.
func (d *decoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// uint32 reads a non-negative integer in plain decimal.
func (d *decoder) uint32(v *uint32) bool {
	n, ok := d.number()
	if !ok || bytes.ContainsAny(n, "-.eE") {
		return false
	}
	u, err := strconv.ParseUint(string(n), 10, 32)
	*v = uint32(u)
	return err == nil
}

// str reads a JSON string into s: valid UTF-8, no raw control
// characters, the escapes of RFC 8259 but surrogates (declined). A string
// without escapes is copied once, from the input.
func (d *decoder) str(s *string) bool {
	if d.peek() != '"' {
		return false
	}
	d.i++
	var buf []byte // nil until the first escape
	run := d.i     // where the input not yet in buf begins
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			if buf == nil {
				*s = string(d.b[run:d.i])
			} else {
				*s = string(append(buf, d.b[run:d.i]...))
			}
			d.i++
			return true
		case c == '\\':
			buf = append(buf, d.b[run:d.i]...)
			r, ok := d.escape()
			if !ok {
				return false
			}
			buf = utf8.AppendRune(buf, r)
			run = d.i
		case c < ' ':
			return false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			d.i += n
		default:
			d.i++
		}
	}
	return false
}

// escape reads the escape at i (its backslash included) and returns the
// character it stands for.
func (d *decoder) escape() (rune, bool) {
	if d.i+1 >= len(d.b) {
		return 0, false
	}
	e := d.b[d.i+1]
	d.i += 2
	switch e {
	case '"', '\\', '/':
		return rune(e), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
		if d.i+4 > len(d.b) {
			return 0, false
		}
		r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 16)
		if err != nil || r >= 0xd800 && r <= 0xdfff {
			return 0, false
		}
		d.i += 4
		return rune(r), true
	}
	return 0, false
}

// skip skips whitespace and returns the next byte (0 at the end).
func (d *decoder) skip() byte {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return d.b[d.i]
		}
	}
	return 0
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (d *decoder) end() bool {
	d.skip()
	return d.i == len(d.b)
}
