package rpc_test

import (
	"context"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// BenchmarkRPCPublish measures one Publish of a one-fact commit (a small
// struct payload) over loopback HTTP, Connect binary and JSON, and
// PublishBatch of 100 such commits per request. One op is one commit;
// allocs/op and cpu-ns/op cover the whole process (client included).
func BenchmarkRPCPublish(b *testing.B) {
	for _, codec := range []string{"proto", "json"} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("connect-%s/commits-per-request=%d", codec, batch), func(b *testing.B) {
				s := benchServer(b)
				opts := []connect.ClientOption{}
				if codec == "json" {
					opts = append(opts, connect.WithProtoJSON())
				}
				c := ringcastv1connect.NewEventServiceClient(s.HTTPClient(ringcast.ProtocolConnect), s.URL, opts...)
				ctx := context.Background()
				cpu0, ok0 := processCPU()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					if batch == 1 {
						if _, err := c.Publish(ctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: benchRPCFacts()})); err != nil {
							b.Fatal(err)
						}
						continue
					}
					commits := make([]*ringcastv1.PublishRequest, batch)
					for j := range commits {
						commits[j] = &ringcastv1.PublishRequest{Facts: benchRPCFacts()}
					}
					if _, err := c.PublishBatch(ctx, connect.NewRequest(&ringcastv1.PublishBatchRequest{Commits: commits})); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if cpu1, ok1 := processCPU(); ok0 && ok1 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
