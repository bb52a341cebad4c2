package hub

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/eventjson"
)

// costShapes are facts of every shape of payload the budgets must count
// truly: small numbers, nested objects and lists, short and long strings,
// binary data.
func costShapes() map[string]*ringcastv1.Fact {
	gauge := map[string]any{}
	for i := range 12 {
		gauge[fmt.Sprint("f", i)] = float64(i) + 0.5
	}
	nested := map[string]any{"site": "g-014", "ok": true, "none": nil,
		"levels": []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0},
		"at":     map[string]any{"lat": 54.1, "lon": -2.7, "tags": []any{"a", "bb", "ccc"}}}
	wide := map[string]any{}
	for i := range 40 {
		wide[fmt.Sprint("k", i)] = fmt.Sprint("v", i)
	}
	data := func(m map[string]any) *ringcastv1.Fact {
		s, err := structpb.NewStruct(m)
		if err != nil {
			panic(err)
		}
		return &ringcastv1.Fact{Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014", Payload: &ringcastv1.Fact_Data{Data: s}}
	}
	return map[string]*ringcastv1.Fact{
		"small numbers": data(gauge),
		"nested":        data(nested),
		"wide strings":  data(wide),
		"long string":   data(map[string]any{"text": strings.Repeat("x", 4000)}),
		"binary":        {Topic: "blobs/a", Type: "blob", Payload: &ringcastv1.Fact_BinaryData{BinaryData: make([]byte, 3000)}},
		"no payload":    {Topic: "a/b", Type: "t"},
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestFactCostIsItsHeap: what factCost counts for a fact is what the fact
// holds on the heap once decoded, as the server decodes a publish (binary
// protobuf, and JSON by eventjson), within a quarter, for every shape of
// payload. Counting protobuf bytes instead undercounts structured data
// several times over.
func TestFactCostIsItsHeap(t *testing.T) {
	const n = 2000
	for name, f := range costShapes() {
		req := &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{f}}
		wire, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		js, err := protojson.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, dec := range []struct {
			name string
			dec  func(*ringcastv1.PublishRequest) error
		}{
			{"protobuf", func(m *ringcastv1.PublishRequest) error { return proto.Unmarshal(wire, m) }},
			{"json", func(m *ringcastv1.PublishRequest) error {
				if !eventjson.UnmarshalPublish(js, m) {
					return fmt.Errorf("eventjson declined %s", js)
				}
				return nil
			}},
		} {
			facts := make([]*ringcastv1.Fact, n)
			base := liveHeap()
			for i := range facts {
				var m ringcastv1.PublishRequest
				if err := dec.dec(&m); err != nil {
					t.Fatal(err)
				}
				facts[i] = m.Facts[0]
			}
			now := liveHeap() // once: a second reading may be higher than the first
			held := float64(now-min(base, now)) / n
			cost := float64(factCost(facts[0]))
			size := float64(proto.Size(facts[0]))
			t.Logf("%-13s %-8s heap %6.0f B/fact, cost %6.0f (%.2f×), protobuf %5.0f (%.2f×)", name, dec.name, held, cost, cost/held, size, size/held)
			if cost < held*0.75 || cost > held*1.25 {
				t.Errorf("%s decoded from %s: factCost %.0f bytes, heap %.0f bytes per fact", name, dec.name, cost, held)
			}
			runtime.KeepAlive(facts)
		}
	}
}
