package eventjson

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// checkReceipts compares AppendReceipts (and AppendReceipt, for each
// receipt) with protojson: equal bytes whenever they encode, declined only
// where protojson fails too.
func checkReceipts(t *testing.T, r *ringcastv1.PublishBatchResponse) {
	t.Helper()
	want, err := reference(t, r)
	got, ok := AppendReceipts([]byte("prefix"), r)
	compare(t, got, ok, want, err, false)
	for _, rc := range r.Receipts {
		want, err := reference(t, rc)
		got, ok := AppendReceipt([]byte("prefix"), rc)
		compare(t, got, ok, want, err, false)
	}
}

func TestAppendReceiptsEqualProtojson(t *testing.T) {
	cases := map[string]*ringcastv1.PublishBatchResponse{
		"no receipts":    {},
		"empty receipts": {Receipts: []*ringcastv1.PublishResponse{}},
		"nil receipt":    {Receipts: []*ringcastv1.PublishResponse{nil, {Seq: 1}}},
		"empty receipt":  {Receipts: []*ringcastv1.PublishResponse{{}}},
		"whole receipts": {Receipts: []*ringcastv1.PublishResponse{
			{Seq: 42, InstanceEpoch: math.MaxUint64, EventTime: timestamppb.New(time.Date(2026, 11, 30, 4, 33, 35, 436381742, time.UTC))},
			{Seq: 42, InstanceEpoch: 1, EventTime: &timestamppb.Timestamp{}, Duplicate: true},
		}},
		"time refused":      {Receipts: []*ringcastv1.PublishResponse{{Seq: 1}, {Seq: 2, EventTime: &timestamppb.Timestamp{Nanos: -1}}}},
		"time out of range": {Receipts: []*ringcastv1.PublishResponse{{EventTime: &timestamppb.Timestamp{Seconds: maxTimestampSeconds + 1}}}},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) { checkReceipts(t, r) })
	}
}

func TestAppendReceiptsRandomEqualProtojson(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 1000 {
		r := &ringcastv1.PublishBatchResponse{}
		for range rng.IntN(4) {
			r.Receipts = append(r.Receipts, &ringcastv1.PublishResponse{
				Seq: rng.Uint64() >> rng.IntN(64), InstanceEpoch: rng.Uint64() >> rng.IntN(64),
				EventTime: randomTime(rng), Duplicate: rng.IntN(2) == 0,
			})
		}
		checkReceipts(t, r)
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
}

// BenchmarkAppendReceipt compares AppendReceipt with protojson on one
// Publish receipt.
func BenchmarkAppendReceipt(b *testing.B) {
	r := &ringcastv1.PublishResponse{Seq: 123456, InstanceEpoch: 10088429785404980995,
		EventTime: timestamppb.New(time.Date(2026, 11, 30, 4, 33, 35, 436381742, time.UTC))}
	b.Run("eventjson", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendReceipt(buf[:0], r)
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = (protojson.MarshalOptions{}).MarshalAppend(buf[:0], r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
