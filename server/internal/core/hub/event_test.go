package hub

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestPublishedEventSizeIsItsEncodedSize: a published commit's event counts
// its encoded size in the ring's budget, also when a fact arrived with an
// Index other than its position (the hub numbers the facts after checking
// them), in Publish and PublishBatch.
func TestPublishedEventSizeIsItsEncodedSize(t *testing.T) {
	h, err := New(Config{Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	facts := func() []*ringcastv1.Fact {
		data, err := structpb.NewStruct(map[string]any{"seq": 1, "pad": "xxxxxxxx", "list": []any{1, "a", map[string]any{"b": true}}})
		if err != nil {
			t.Fatal(err)
		}
		return []*ringcastv1.Fact{
			{Index: 300, Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_Data{Data: data}},
			{Topic: "a/c", Type: "t", Key: "k", Payload: &ringcastv1.Fact_BinaryData{BinaryData: []byte("bytes")}},
			{Index: 1, Topic: "a/d", Type: "t", Payload: &ringcastv1.Fact_Data{Data: data}},
		}
	}
	check := func(seq uint64) {
		t.Helper()
		h.mu.RLock()
		ev := h.ring.get(seq)
		h.mu.RUnlock()
		// A clone has no cached sizes: its size is computed afresh.
		if want := int64(proto.Size(proto.Clone(ev.resp))); ev.size != want {
			t.Fatalf("event %d counts %d bytes, its encoding is %d", seq, ev.size, want)
		}
	}
	r, err := h.Publish(facts(), "")
	if err != nil {
		t.Fatal(err)
	}
	check(r.Seq)
	rs, err := h.PublishBatch(context.Background(), []Commit{{Facts: facts()}, {Facts: facts(), Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
	if err != nil {
		t.Fatal(err)
	}
	check(rs[0].Seq)
	check(rs[1].Seq)
}
