package hub_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestInvalidFactNamesTheValue: a fact refused for its data (too deep, a
// number JSON cannot carry, or a value of no kind, which binary can carry
// and JSON cannot) is refused with ErrInvalidFact, naming the
// fact and the path of the offending value within its data, and the limit.
func TestInvalidFactNamesTheValue(t *testing.T) {
	h := newHub(t, hub.Config{Window: 64, MaxDataDepth: 3})
	data := func(js string) *ringcastv1.Fact {
		var s structpb.Struct
		if err := protojson.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		return &ringcastv1.Fact{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_Data{Data: &s}}
	}
	withNaN := func(js, field string) *ringcastv1.Fact {
		f := data(js)
		f.GetData().Fields[field] = structpb.NewNumberValue(math.NaN())
		return f
	}
	nanInList := data(`{"a":{"b":[1,2,3]}}`)
	nanInList.GetData().Fields["a"].GetStructValue().Fields["b"].GetListValue().Values[2] = structpb.NewNumberValue(math.Inf(1))
	kindless := data(`{"a":{"b":[1,2]}}`)
	kindless.GetData().Fields["a"].GetStructValue().Fields["b"].GetListValue().Values[1] = &structpb.Value{}
	emptyEntry := data(`{"ok":1}`)
	emptyEntry.GetData().Fields["e"] = &structpb.Value{}
	cases := []struct {
		name string
		fact *ringcastv1.Fact
		want string
	}{
		{"NaN at the top", withNaN(`{"ok":1}`, "n"), "facts[1].data.n: numbers must be finite"},
		{"Inf in a list in an object", nanInList, "facts[1].data.a.b[2]: numbers must be finite"},
		{"an object too deep", data(`{"a":{"b":{"c":{"d":1}}}}`), "facts[1].data.a.b.c: objects and arrays nest deeper than the limit of 3 levels"},
		{"a value without a kind in a list", kindless, "facts[1].data.a.b[1]: a value must be null"},
		{"an empty struct entry", emptyEntry, "facts[1].data.e: a value must be null"},
		{"a list too deep", data(`{"a":[{"x":1},[[1]]]}`), "facts[1].data.a[1][0]: objects and arrays nest deeper than the limit of 3 levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Publish([]*ringcastv1.Fact{data(`{"a":[[1]]}`), tc.fact}, "")
			if !errors.Is(err, hub.ErrInvalidFact) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidFact naming %q", err, tc.want)
			}
			_, err = h.PublishBatch(context.Background(), []hub.Commit{{Facts: []*ringcastv1.Fact{data(`{}`)}}, {Facts: []*ringcastv1.Fact{data(`{}`), tc.fact}}})
			if !errors.Is(err, hub.ErrInvalidFact) || !strings.Contains(err.Error(), "commits[1]."+tc.want) {
				t.Fatalf("batch: err %v, want ErrInvalidFact naming %q", err, "commits[1]."+tc.want)
			}
		})
	}
	if _, err := h.Publish([]*ringcastv1.Fact{data(`{"a":[[1]],"b":{"c":{"d":1}}}`)}, ""); err != nil {
		t.Fatalf("data 3 levels deep: %v", err)
	}
}
