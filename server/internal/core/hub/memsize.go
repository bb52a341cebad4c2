package hub

import (
	"math/bits"
	"unsafe"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// A fact's cost is what it holds on the heap once decoded, which is what
// the ring's and the state table's byte budgets count (docs/limits.md,
// "Bytes, and what counts"). For a fact of binary data or long strings
// that is about its protobuf size; for structured data it is several
// times more: every Value of a Struct is a message of its own with its
// kind in a separate wrapper, and every Struct a Go map. A budget counting
// protobuf bytes let the heap grow to many times the budget for data of
// many small fields; counting the decoded tree keeps the heap within a
// small multiple of the budgets, whatever the data's shape
// (TestFactCostIsItsHeap, TestHeapStaysWithinTheByteBudgets).
//
// The costs are estimates from the objects' sizes, rounded up the way the
// Go allocator rounds (to within an eighth); strings are counted at their
// length, as decoders allocate them.

// Sizes of the objects a fact is made of.
const (
	factObj       = int(unsafe.Sizeof(ringcastv1.Fact{}))
	structObj     = int(unsafe.Sizeof(structpb.Struct{}))
	valueObj      = int(unsafe.Sizeof(structpb.Value{}))
	listObj       = int(unsafe.Sizeof(structpb.ListValue{}))
	wordObj       = 8                               // a oneof wrapper of one word (a number, a bool, a pointer)
	stringWrapObj = int(unsafe.Sizeof(""))          // a oneof wrapper of a string
	bytesWrapObj  = int(unsafe.Sizeof([]byte(nil))) // a oneof wrapper of bytes
	// A Go map of string keys and pointer values: its header, and groups
	// of 8 slots (a control word, 8 × (key + value)), filled to at most
	// 7/8; a map past 8 entries adds a table and a directory.
	mapHeader   = 48
	mapGroup    = 8 + 8*(16+8)
	mapTableHdr = 32 + 8
	// A state table entry: the entry, and its slot in the key index.
	stateEntryObj = int(unsafe.Sizeof(stateEntry{})) + 32
)

// allocSize is the heap taken by an object of n bytes: n rounded up as the
// allocator's size classes round (to within an eighth; whole pages of 8
// KiB past 32 KiB).
func allocSize(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return (n + 7) &^ 7
	case n > 32<<10:
		return (n + 8191) &^ 8191
	}
	step := 1 << (bits.Len(uint(n-1)) - 3) // an eighth of the next power of two
	return (n + step - 1) &^ (step - 1)
}

// factCost is what fact f holds on the heap: the Fact, its strings, and its
// payload (binary data at its capacity, structured data as its tree).
func factCost(f *ringcastv1.Fact) int {
	n := allocSize(factObj) + allocSize(len(f.Topic)) + allocSize(len(f.Type)) + allocSize(len(f.Key)) +
		allocSize(len(f.ContentType)) + allocSize(len(f.ProtoReflect().GetUnknown()))
	switch p := f.Payload.(type) {
	case *ringcastv1.Fact_Data:
		n += wordObj + structCost(p.Data)
	case *ringcastv1.Fact_BinaryData:
		n += allocSize(bytesWrapObj) + allocSize(cap(p.BinaryData))
	}
	return n
}

// structCost is what a decoded Struct holds: the message, its map, and
// each key and value.
func structCost(s *structpb.Struct) int {
	if s == nil {
		return 0
	}
	n := allocSize(structObj) + mapCost(len(s.Fields))
	for k, v := range s.Fields {
		n += allocSize(len(k)) + valueCost(v)
	}
	return n
}

// mapCost is the heap of a map of n string keys to pointers.
func mapCost(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= 8:
		return mapHeader + allocSize(mapGroup)
	}
	slots := 1 << bits.Len(uint((n*8+6)/7-1)) // the power of two a map grows to
	return mapHeader + mapTableHdr + allocSize(slots/8*mapGroup)
}

// valueCost is what a decoded Value holds: the message, its kind's wrapper
// and what the kind holds.
func valueCost(v *structpb.Value) int {
	if v == nil {
		return 0
	}
	n := allocSize(valueObj)
	switch k := v.Kind.(type) {
	case *structpb.Value_StringValue:
		n += allocSize(stringWrapObj) + allocSize(len(k.StringValue))
	case *structpb.Value_StructValue:
		n += wordObj + structCost(k.StructValue)
	case *structpb.Value_ListValue:
		n += wordObj + listCost(k.ListValue)
	case nil:
	default: // number, bool, null: one word
		n += wordObj
	}
	return n
}

// listCost is what a decoded ListValue holds.
func listCost(l *structpb.ListValue) int {
	if l == nil {
		return 0
	}
	n := allocSize(listObj) + allocSize(8*cap(l.Values))
	for _, v := range l.Values {
		n += valueCost(v)
	}
	return n
}
