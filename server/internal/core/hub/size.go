package hub

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// factSize is proto.Size(f), computed without reflection. A fact's size is
// a unit of the ring's and the state table's byte budgets and is checked
// against max-fact-bytes on every publish; protobuf sizes the map of a
// Struct by reflection, several times slower than summing the fields here
// (BenchmarkFactSize). Every field of Fact, Struct, Value and ListValue is counted,
// and unknown fields as they are kept (TestFactSizeIsProtoSize also fails
// when a field is added to Fact and not here).
func factSize(f *ringcastv1.Fact) int {
	n := len(f.ProtoReflect().GetUnknown())
	if f.Index != 0 {
		n += 1 + protowire.SizeVarint(uint64(f.Index))
	}
	n += stringSize(f.Topic) + stringSize(f.Type) + stringSize(f.Key) + stringSize(f.ContentType)
	switch p := f.Payload.(type) {
	case *ringcastv1.Fact_Data:
		n += 1 + protowire.SizeBytes(structSize(p.Data))
	case *ringcastv1.Fact_BinaryData:
		n += 1 + protowire.SizeBytes(len(p.BinaryData))
	}
	return n
}

// stringSize is the size of a singular string field numbered below 16
// (a one-byte tag), absent when empty.
func stringSize(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

// structSize is proto.Size(s): each entry of its map is a message of a
// key and a value, both written even when empty.
func structSize(s *structpb.Struct) int {
	if s == nil {
		return 0
	}
	n := len(s.ProtoReflect().GetUnknown())
	for k, v := range s.Fields {
		e := 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(valueSize(v))
		n += 1 + protowire.SizeBytes(e)
	}
	return n
}

// valueSize is proto.Size(v): the member of its oneof that is set, written
// even when it is a zero.
func valueSize(v *structpb.Value) int {
	if v == nil {
		return 0
	}
	n := len(v.ProtoReflect().GetUnknown())
	switch k := v.Kind.(type) {
	case *structpb.Value_NullValue:
		n += 1 + protowire.SizeVarint(uint64(k.NullValue))
	case *structpb.Value_NumberValue:
		n += 1 + protowire.SizeFixed64()
	case *structpb.Value_StringValue:
		n += 1 + protowire.SizeBytes(len(k.StringValue))
	case *structpb.Value_BoolValue:
		n += 1 + 1
	case *structpb.Value_StructValue:
		n += 1 + protowire.SizeBytes(structSize(k.StructValue))
	case *structpb.Value_ListValue:
		n += 1 + protowire.SizeBytes(listSize(k.ListValue))
	}
	return n
}

// listSize is proto.Size(l).
func listSize(l *structpb.ListValue) int {
	if l == nil {
		return 0
	}
	n := len(l.ProtoReflect().GetUnknown())
	for _, v := range l.Values {
		n += 1 + protowire.SizeBytes(valueSize(v))
	}
	return n
}
