package hub

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// sizeFacts are facts with every field, payload and kind of value set and
// unset, nil where Go allows it, lengths on both sides of a varint's byte,
// and unknown fields at every level.
func sizeFacts(t testing.TB) []*ringcastv1.Fact {
	data := func(m map[string]any) *ringcastv1.Fact_Data {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return &ringcastv1.Fact_Data{Data: s}
	}
	long := strings.Repeat("x", 200)
	withUnknown := func(m proto.Message) {
		u := protowire.AppendTag(nil, 99, protowire.BytesType)
		m.ProtoReflect().SetUnknown(protowire.AppendString(u, "kept"))
	}
	unknownFact := &ringcastv1.Fact{Topic: "a", Payload: data(map[string]any{"x": []any{1.0, "s"}})}
	withUnknown(unknownFact)
	withUnknown(unknownFact.GetData())
	withUnknown(unknownFact.GetData().Fields["x"])
	withUnknown(unknownFact.GetData().Fields["x"].GetListValue())
	return []*ringcastv1.Fact{
		{},
		{Index: 1, Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014", ContentType: "x"},
		{Index: 300, Topic: long, Type: long, Key: long, ContentType: long},
		{Payload: &ringcastv1.Fact_BinaryData{}},
		{Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte(long)}},
		{Payload: &ringcastv1.Fact_Data{}},
		{Payload: data(map[string]any{})},
		{Payload: data(map[string]any{
			"": "", "n": 0.0, "f": -1.5, "t": true, "no": false, "null": nil, long: long,
			"obj":  map[string]any{"deep": map[string]any{"list": []any{}}},
			"list": []any{nil, 1.0, "two", []any{map[string]any{}}, strings.Repeat("y", 127), strings.Repeat("y", 128)},
		})},
		{Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{Fields: map[string]*structpb.Value{
			"nil": nil, "nokind": {}, "nilstruct": {Kind: &structpb.Value_StructValue{}},
			"nillist":  {Kind: &structpb.Value_ListValue{}},
			"nilitems": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{nil, {}}}),
			"nullkind": {Kind: &structpb.Value_NullValue{NullValue: 7}},
		}}}},
		unknownFact,
	}
}

// TestFactSizeIsProtoSize: factSize agrees with protobuf on every shape of
// fact, and Fact has no field it does not count.
func TestFactSizeIsProtoSize(t *testing.T) {
	for i, f := range sizeFacts(t) {
		if got, want := factSize(f), proto.Size(f); got != want {
			t.Errorf("fact %d: factSize %d, proto.Size %d: %v", i, got, want, f)
		}
	}
	counted := map[protoreflect.Name]bool{
		"index": true, "topic": true, "type": true, "key": true,
		"data": true, "binary_data": true, "content_type": true,
	}
	fields := (&ringcastv1.Fact{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if name := fields.Get(i).Name(); !counted[name] {
			t.Errorf("Fact.%s is not counted by factSize", name)
		}
	}
	if fields.Len() != len(counted) {
		t.Errorf("Fact has %d fields, factSize counts %d", fields.Len(), len(counted))
	}
}

// TestCommitEventSizeIsProtoSize: a commit event's size is its response's
// protobuf size, for no fact, one, and all of sizeFacts (the commit's
// length then takes more bytes), with and without a traceparent.
func TestCommitEventSizeIsProtoSize(t *testing.T) {
	all := sizeFacts(t)
	for _, facts := range [][]*ringcastv1.Fact{nil, all[:1], all[7:8], all} {
		for _, tp := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
			ev := newCommitEvent(1<<60, 1<<40, time.Unix(1796013215, 436381742), facts, tp)
			// A clone has no cached sizes: its size is computed afresh.
			if want := int64(proto.Size(proto.Clone(ev.resp))); ev.size != want {
				t.Errorf("%d facts, traceparent %q: size %d, encoding %d bytes", len(facts), tp, ev.size, want)
			}
		}
	}
}

// FuzzFactSize compares factSize with proto.Size on facts decoded from
// protobuf, unknown fields and all.
func FuzzFactSize(f *testing.F) {
	for _, fact := range sizeFacts(f) {
		b, err := proto.Marshal(fact)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fact ringcastv1.Fact
		if proto.Unmarshal(b, &fact) != nil {
			return
		}
		if got, want := factSize(&fact), proto.Size(&fact); got != want {
			t.Fatalf("factSize %d, proto.Size %d: %v", got, want, &fact)
		}
	})
}

// BenchmarkFactSize sizes a fact with 100 bytes of JSON data, as the load
// tool publishes: by factSize, and by protobuf's reflection; and costs it
// (factCost, its heap, what the byte budgets count).
func BenchmarkFactSize(b *testing.B) {
	d, err := structpb.NewStruct(map[string]any{"seq": 12345.0, "ts": 1.7646e18, "pad": strings.Repeat("x", 60)})
	if err != nil {
		b.Fatal(err)
	}
	f := &ringcastv1.Fact{Topic: "bench/t1", Type: "bench", Payload: &ringcastv1.Fact_Data{Data: d}}
	b.Run("factSize", func(b *testing.B) {
		for b.Loop() {
			factSize(f)
		}
	})
	b.Run("proto.Size", func(b *testing.B) {
		for b.Loop() {
			proto.Size(f)
		}
	})
	b.Run("factCost", func(b *testing.B) {
		for b.Loop() {
			factCost(f)
		}
	})
}
