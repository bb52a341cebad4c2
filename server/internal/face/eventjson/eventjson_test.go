package eventjson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// reference is what Append must equal: protojson's encoding, compacted.
func reference(t *testing.T, r proto.Message) ([]byte, error) {
	t.Helper()
	raw, err := protojson.Marshal(r)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("protojson wrote invalid JSON %q: %v", raw, err)
	}
	return b.Bytes(), nil
}

// check compares Append with the reference: equal bytes whenever Append
// encodes, and a declined encoding only where protojson fails too or the
// response is one Append leaves to it.
func check(t *testing.T, o Options, r *ringcastv1.SubscribeEventsResponse) {
	t.Helper()
	want, err := reference(t, r)
	got, ok := o.Append([]byte("prefix"), r)
	compare(t, got, ok, want, err, leftToProtojson(r, o.MaxDepth))
}

// compare checks an encoder's output, written after "prefix", against
// protojson's (want, err): equal bytes whenever it encodes, and declined
// only where protojson fails too or mayDecline.
func compare(t *testing.T, got []byte, ok bool, want []byte, err error, mayDecline bool) {
	t.Helper()
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("lost what dst held: %q", got)
	}
	got = got[len("prefix"):]
	switch {
	case ok && err != nil:
		t.Fatalf("encoded what protojson refuses (%v): %s", err, got)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("differs from protojson:\n got %s\nwant %s", got, want)
	case !ok && len(got) != 0:
		t.Fatalf("declined but wrote %q", got)
	case !ok && err == nil && !mayDecline:
		t.Fatalf("declined what it should encode:\n%s", want)
	}
}

// leftToProtojson reports whether r is something Append declines though
// protojson encodes it.
func leftToProtojson(r *ringcastv1.SubscribeEventsResponse, maxDepth int) bool {
	switch r.Event.(type) {
	case *ringcastv1.SubscribeEventsResponse_Commit, *ringcastv1.SubscribeEventsResponse_Progress:
	default:
		return true
	}
	if ts := r.GetEventTime(); ts != nil && ts.Nanos == 1e9 {
		return true
	}
	for _, f := range r.GetCommit().GetFacts() {
		if d := f.GetData(); d != nil && depthOf(structpb.NewStructValue(d)) > maxDepth {
			return true
		}
	}
	return false
}

func depthOf(v *structpb.Value) int {
	d := 0
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		for _, e := range k.StructValue.GetFields() {
			d = max(d, depthOf(e))
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			d = max(d, depthOf(e))
		}
	default:
		return 0
	}
	return d + 1
}

func TestAppendEqualsProtojson(t *testing.T) {
	cases := map[string]*ringcastv1.SubscribeEventsResponse{
		"empty":                    {},
		"progress":                 {Seq: 7, InstanceEpoch: math.MaxUint64, Event: &ringcastv1.SubscribeEventsResponse_Progress{Progress: &ringcastv1.Progress{}}},
		"nil progress":             {Seq: 7, Event: &ringcastv1.SubscribeEventsResponse_Progress{}},
		"nil commit":               {Seq: 7, Event: &ringcastv1.SubscribeEventsResponse_Commit{}},
		"empty commit":             {Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{}}},
		"nil fact":                 {Event: commit(nil)},
		"empty binary":             {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_BinaryData{}})},
		"nil data":                 {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{}})},
		"empty data":               {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}})},
		"nil value":                {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": nil}}}})},
		"kindless value":           {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": {}}}}})},
		"nil struct value":         {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": {Kind: &structpb.Value_StructValue{}}}}}})},
		"nil list value":           {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": {Kind: &structpb.Value_ListValue{}}}}}})},
		"time zero":                {EventTime: &timestamppb.Timestamp{}, Event: commit()},
		"time first":               {EventTime: &timestamppb.Timestamp{Seconds: minTimestampSeconds}, Event: commit()},
		"time last":                {EventTime: &timestamppb.Timestamp{Seconds: maxTimestampSeconds, Nanos: 999999999}, Event: commit()},
		"time before first":        {EventTime: &timestamppb.Timestamp{Seconds: minTimestampSeconds - 1}, Event: commit()},
		"time after last":          {EventTime: &timestamppb.Timestamp{Seconds: maxTimestampSeconds + 1}, Event: commit()},
		"time negative nanos":      {EventTime: &timestamppb.Timestamp{Seconds: 5, Nanos: -1}, Event: commit()},
		"time a second of nanos":   {EventTime: &timestamppb.Timestamp{Seconds: 5, Nanos: 1e9}, Event: commit()},
		"time millis":              {EventTime: &timestamppb.Timestamp{Seconds: 1, Nanos: 120e6}, Event: commit()},
		"time micros":              {EventTime: &timestamppb.Timestamp{Seconds: 1, Nanos: 123400}, Event: commit()},
		"time nanos":               {EventTime: &timestamppb.Timestamp{Seconds: 1, Nanos: 5}, Event: commit()},
		"invalid utf-8 topic":      {Event: commit(&ringcastv1.Fact{Topic: "a\xffb"})},
		"invalid utf-8 key":        {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"k\xc3": structpb.NewNullValue()}}}})},
		"replacement character":    {Event: commit(&ringcastv1.Fact{Topic: "a\uFFFDb"})},
		"gap is left to protojson": {Event: &ringcastv1.SubscribeEventsResponse_Gap{Gap: &ringcastv1.Gap{HeadSeq: 3}}},
		"escapes": {Event: commit(&ringcastv1.Fact{Topic: "q\"b\\s/\b\f\n\r\t\x00\x01\x1f\x7f<>&\u2028\u2029é😀", Payload: data(map[string]any{
			"z": "\x00</script>", "a": []any{nil, true, false, "x"}, "é": map[string]any{}, "": 0.0,
		})})},
		"numbers": {Event: commit(&ringcastv1.Fact{Payload: data(map[string]any{
			"a": 0.0, "b": math.Copysign(0, -1), "c": 1e-6, "d": 9.99e-7, "e": 1e21, "f": 9.99e20, "g": -1e-7,
			"h": 123456789.125, "i": math.MaxFloat64, "j": math.SmallestNonzeroFloat64, "k": 1e100, "l": -2.5e-300,
			"m": float64(1 << 53), "n": 0.1, "o": 100.0,
		})})},
		"nan":      {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNumberValue(math.NaN())}}}})},
		"infinity": {Event: commit(&ringcastv1.Fact{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNumberValue(math.Inf(-1))}}}})},
		"whole commit": {Seq: 42, InstanceEpoch: 10088429785404980995, EventTime: &timestamppb.Timestamp{Seconds: 1795926815, Nanos: 436381742},
			Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{FactCount: 13, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
				Facts: []*ringcastv1.Fact{
					{Index: 1, Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014", Payload: data(map[string]any{"level_m": 1.42})},
					{Index: 2, Topic: "t", Type: "blob", Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte{0, 1, 2, 250, 251}}, ContentType: "application/cbor"},
				}}}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			for _, o := range []Options{{MaxDepth: 8}, {MaxDepth: 8, OmitPosition: true}} {
				if o.OmitPosition {
					r = proto.CloneOf(r)
					r.Seq, r.InstanceEpoch = 0, 0
					check(t, Options{MaxDepth: o.MaxDepth}, r)
					got, ok1 := o.Append(nil, r)
					want, ok2 := Options{MaxDepth: o.MaxDepth}.Append(nil, r)
					if ok1 != ok2 || !bytes.Equal(got, want) {
						t.Fatalf("OmitPosition on a response without a position: %s, want %s", got, want)
					}
					continue
				}
				check(t, o, r)
			}
		})
	}
}

// TestAppendOmitsPosition: with OmitPosition, seq and instanceEpoch are
// left out and nothing else changes.
func TestAppendOmitsPosition(t *testing.T) {
	r := &ringcastv1.SubscribeEventsResponse{Seq: 42, InstanceEpoch: 7, EventTime: timestamppb.Now(), Event: commit(&ringcastv1.Fact{Topic: "a", Type: "b"})}
	got, ok := Options{MaxDepth: 4, OmitPosition: true}.Append(nil, r)
	if !ok {
		t.Fatal("Append declined a commit")
	}
	bare := proto.CloneOf(r)
	bare.Seq, bare.InstanceEpoch = 0, 0
	want, err := reference(t, bare)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %s, want %s (%v)", got, want, err)
	}
}

// TestAppendDeclinesDeepData: data nested deeper than MaxDepth is left to
// protojson, at exactly the bound, for structs and lists alike.
func TestAppendDeclinesDeepData(t *testing.T) {
	nest := func(n int, list bool) map[string]any {
		var v any = 1.0
		for range n - 1 {
			if list {
				v = []any{v}
			} else {
				v = map[string]any{"x": v}
			}
		}
		return map[string]any{"top": v}
	}
	for _, list := range []bool{false, true} {
		for depth := 1; depth <= 6; depth++ {
			r := &ringcastv1.SubscribeEventsResponse{Event: commit(&ringcastv1.Fact{Payload: data(nest(depth, list))})}
			for max := 1; max <= 6; max++ {
				_, ok := Options{MaxDepth: max}.Append(nil, r)
				if ok != (depth <= max) {
					t.Fatalf("list %v, data depth %d, MaxDepth %d: encoded %v", list, depth, max, ok)
				}
				check(t, Options{MaxDepth: max}, r)
			}
		}
	}
}

// TestAppendRandomEqualsProtojson compares Append with protojson over
// generated commits: random strings (escapes, multi-byte, invalid UTF-8),
// numbers of every magnitude, nested structs and lists.
func TestAppendRandomEqualsProtojson(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		r := randomResponse(rng)
		o := Options{MaxDepth: 1 + rng.IntN(5), OmitPosition: false}
		check(t, o, r)
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
}

// FuzzAppend compares Append with protojson for responses decoded from
// arbitrary bytes.
func FuzzAppend(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		b, _ := proto.Marshal(randomResponse(rng))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ringcastv1.SubscribeEventsResponse
		if proto.Unmarshal(b, &r) != nil {
			return
		}
		check(t, Options{MaxDepth: 4}, &r)
	})
}

func commit(facts ...*ringcastv1.Fact) *ringcastv1.SubscribeEventsResponse_Commit {
	return &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{Facts: facts}}
}

func data(m map[string]any) *ringcastv1.Fact_Data {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return &ringcastv1.Fact_Data{Data: s}
}

func randomResponse(rng *rand.Rand) *ringcastv1.SubscribeEventsResponse {
	r := &ringcastv1.SubscribeEventsResponse{}
	if rng.IntN(4) > 0 {
		r.Seq = rng.Uint64() >> rng.IntN(64)
	}
	if rng.IntN(4) > 0 {
		r.InstanceEpoch = rng.Uint64()
	}
	r.EventTime = randomTime(rng)
	if rng.IntN(10) == 0 {
		r.Event = &ringcastv1.SubscribeEventsResponse_Progress{Progress: &ringcastv1.Progress{}}
		return r
	}
	c := &ringcastv1.Commit{FactCount: uint32(rng.IntN(4)), Traceparent: randomString(rng, 0)}
	for range rng.IntN(4) {
		f := &ringcastv1.Fact{Index: uint32(rng.IntN(3)), Topic: randomString(rng, 1), Type: randomString(rng, 1), Key: randomString(rng, 0), ContentType: randomString(rng, 0)}
		switch rng.IntN(3) {
		case 0:
			f.Payload = &ringcastv1.Fact_BinaryData{BinaryData: []byte(randomString(rng, 0))}
		case 1:
			f.Payload = &ringcastv1.Fact_Data{Data: randomValue(rng, 0).GetStructValue()}
		}
		c.Facts = append(c.Facts, f)
	}
	r.Event = &ringcastv1.SubscribeEventsResponse_Commit{Commit: c}
	return r
}

// randomTime is nil a fifth of the time; otherwise a time with 0, 3, 6 or
// 9 fractional digits.
func randomTime(rng *rand.Rand) *timestamppb.Timestamp {
	if rng.IntN(5) == 0 {
		return nil
	}
	t := &timestamppb.Timestamp{Seconds: minTimestampSeconds + rng.Int64N(maxTimestampSeconds-minTimestampSeconds+1), Nanos: int32(rng.IntN(1e9))}
	switch rng.IntN(4) {
	case 0:
		t.Nanos = t.Nanos / 1e6 * 1e6
	case 1:
		t.Nanos = t.Nanos / 1e3 * 1e3
	case 2:
		t.Nanos = 0
	}
	return t
}

// randomString is empty half of the time unless nonEmpty; otherwise a mix
// of ASCII, escapes, multi-byte characters and, rarely, invalid UTF-8.
func randomString(rng *rand.Rand, nonEmpty int) string {
	if nonEmpty == 0 && rng.IntN(2) == 0 {
		return ""
	}
	pieces := []string{"a", "Z", "gauges/ribble", "-", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\u2028", "\uFFFD", "<", "&"}
	var b strings.Builder
	for range 1 + rng.IntN(8) {
		if rng.IntN(200) == 0 {
			b.WriteString("\xff")
			continue
		}
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// randomValue returns a struct at depth 0 and any kind of value below.
func randomValue(rng *rand.Rand, depth int) *structpb.Value {
	kind := 4
	if depth > 0 {
		kind = rng.IntN(6)
		if depth > 5 {
			kind = rng.IntN(4)
		}
	}
	switch kind {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewBoolValue(rng.IntN(2) == 0)
	case 2:
		return structpb.NewStringValue(randomString(rng, 0))
	case 3:
		n := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(60)-30))
		switch rng.IntN(8) {
		case 0:
			n = math.Round(n)
		case 1:
			n = float64(rng.Int64N(1 << 60))
		}
		return structpb.NewNumberValue(n)
	case 4:
		s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for range rng.IntN(5) {
			s.Fields[randomString(rng, 0)] = randomValue(rng, depth+1)
		}
		return structpb.NewStructValue(s)
	default:
		l := &structpb.ListValue{}
		for range rng.IntN(4) {
			l.Values = append(l.Values, randomValue(rng, depth+1))
		}
		return structpb.NewListValue(l)
	}
}

// BenchmarkAppend compares Append with protojson (and the compaction the
// SSE face needs) on a gauge reading's commit.
func BenchmarkAppend(b *testing.B) {
	r := &ringcastv1.SubscribeEventsResponse{Seq: 123456, InstanceEpoch: 10088429785404980995,
		EventTime: timestamppb.New(time.Date(2026, 11, 30, 4, 33, 35, 436381742, time.UTC)),
		Event: commit(&ringcastv1.Fact{Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014",
			Payload: data(map[string]any{"level_m": 1.42, "trend": "rising", "station": "Ribble at Samlesbury", "ts": 1795926815436.0})})}
	b.Run("eventjson", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = OnStack.Append(buf[:0], r)
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		var out bytes.Buffer
		for b.Loop() {
			raw, err := protojson.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			out.Reset()
			if err := json.Compact(&out, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
