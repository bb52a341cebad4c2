package rpc

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// checkFinite rejects facts whose data holds NaN or ±Inf. Binary protobuf
// carries them, but JSON cannot: such a fact would break every Connect-JSON
// and SSE subscriber (and `ringcast tail`) at that event for as long as it
// stays in the ring, so it is refused at the edge like any other bad fact.
func checkFinite(facts []*ringcastv1.Fact) error {
	for i, f := range facts {
		if path, bad := nonFinite(structpb.NewStructValue(f.GetData()), "data"); bad {
			return fmt.Errorf("facts[%d].%s: numbers must be finite (JSON has no NaN or Infinity)", i, path)
		}
	}
	return nil
}

// nonFinite finds a NaN or infinite number in v and says where.
func nonFinite(v *structpb.Value, path string) (string, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return path, true
		}
	case *structpb.Value_StructValue:
		for name, field := range k.StructValue.GetFields() {
			if p, bad := nonFinite(field, path+"."+name); bad {
				return p, true
			}
		}
	case *structpb.Value_ListValue:
		for j, item := range k.ListValue.GetValues() {
			if p, bad := nonFinite(item, fmt.Sprintf("%s[%d]", path, j)); bad {
				return p, true
			}
		}
	}
	return "", false
}
