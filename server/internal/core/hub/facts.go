package hub

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// ErrInvalidFact is wrapped by the error Publish returns for a fact that
// could not be delivered to every subscriber (see checkFacts). The RPC edge
// answers it with invalid_argument.
var ErrInvalidFact = errors.New("invalid fact")

// checkFacts refuses facts that some face or client could not carry. Every
// fact the hub accepts must encode as protobuf, Connect JSON and SSE JSON
// and decode with every client's default codec, for as long as it stays in
// the ring or the latest-per-key table; one fact that does not would break
// every subscriber that reaches it. So a fact is refused when:
//
//   - its protobuf encoding exceeds maxBytes (a fact is also a unit of the
//     ring's and the table's byte budgets);
//   - its data nests objects and arrays deeper than maxDepth levels (the
//     data object itself is level 1): protobuf decoders stop at a recursion
//     limit, and each JSON level costs several protobuf levels;
//   - its data holds NaN or ±Inf, which JSON cannot carry.
//
// The error names the fact's index and the limit, and the commit's index
// within a batch when commit >= 0 (e.g. "commits[2].facts[0]").
func checkFacts(commit int, facts []*ringcastv1.Fact, maxBytes, maxDepth int) error {
	for i, f := range facts {
		if n := factSize(f); n > maxBytes {
			return fmt.Errorf("%w: %s is %d bytes encoded, over the limit of %d bytes (max-fact-bytes)", ErrInvalidFact, factPath(commit, i), n, maxBytes)
		}
		if d := f.GetData(); d != nil {
			if path, why := checkStruct(d, 1, maxDepth); why != "" {
				return fmt.Errorf("%w: %s.data%s: %s", ErrInvalidFact, factPath(commit, i), path, why)
			}
		}
	}
	return nil
}

// factPath names fact i of a Publish (commit < 0) or of a batch's commit.
// It is built only for an error: a batch checks every commit.
func factPath(commit, i int) string {
	if commit < 0 {
		return fmt.Sprintf("facts[%d]", i)
	}
	return fmt.Sprintf("commits[%d].facts[%d]", commit, i)
}

// checkStruct walks s (at nesting level depth) and returns, when a value
// in it breaks a rule, that value's path below s (".name[2]") and the
// reason. The path is built only then, on the way back up.
func checkStruct(s *structpb.Struct, depth, maxDepth int) (string, string) {
	if depth > maxDepth {
		return "", tooDeep(maxDepth)
	}
	for name, field := range s.GetFields() {
		if p, why := checkValue(field, depth+1, maxDepth); why != "" {
			return "." + name + p, why
		}
	}
	return "", ""
}

// checkValue is checkStruct for any value.
func checkValue(v *structpb.Value, depth, maxDepth int) (string, string) {
	switch k := v.GetKind().(type) {
	case nil:
		// Possible in binary (an empty map entry or list item), but not
		// in JSON: no JSON or SSE subscriber could be sent it.
		return "", "a value must be null, a number, a string, a bool, an object or a list"
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return "", "numbers must be finite (JSON has no NaN or Infinity)"
		}
	case *structpb.Value_StructValue:
		return checkStruct(k.StructValue, depth, maxDepth)
	case *structpb.Value_ListValue:
		if depth > maxDepth {
			return "", tooDeep(maxDepth)
		}
		for j, item := range k.ListValue.GetValues() {
			if p, why := checkValue(item, depth+1, maxDepth); why != "" {
				return fmt.Sprintf("[%d]%s", j, p), why
			}
		}
	}
	return "", ""
}

func tooDeep(maxDepth int) string {
	return fmt.Sprintf("objects and arrays nest deeper than the limit of %d levels (max-data-depth)", maxDepth)
}
