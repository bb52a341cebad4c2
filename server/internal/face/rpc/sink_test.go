package rpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestBatchedStreamsDecodeInBothCodecs: a stream that replays many events
// (the first through connect, the rest as cached envelopes written in one
// batch), then control messages, filtered commits and live events, decodes
// message by message in order — on every protocol, in binary and in JSON.
func TestBatchedStreamsDecodeInBothCodecs(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		for _, codec := range []string{"proto", "json"} {
			t.Run(codec, func(t *testing.T) {
				opts := ringtest.ClientOptions(p)
				if codec == "json" {
					opts = append(opts, connect.WithProtoJSON())
				}
				c := ringcastv1connect.NewEventServiceClient(srv.HTTPClient(p), srv.URL, opts...)
				_, before := srv.Hub().Bounds()
				for i := range 40 {
					publish(t, c, fact(fmt.Sprintf("a/%d", i%2), fmt.Sprintf("k%d", i), i))
				}
				_, head := srv.Hub().Bounds()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				// All topics: shared events (the batch path). Then a filter:
				// per-stream commits and Progress through connect.
				for _, topics := range [][]string{nil, {"a/1"}} {
					s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{SinceSeq: before, InstanceEpoch: srv.Hub().Epoch(), Topics: topics}))
					if err != nil {
						t.Fatal(err)
					}
					var seqs []uint64
					var keys []string
					caught := false
					for !caught || len(keys) < 2 {
						if !s.Receive() {
							t.Fatalf("stream ended: %v", s.Err())
						}
						m := s.Msg()
						if m.InstanceEpoch != srv.Hub().Epoch() {
							t.Fatalf("message with epoch %x", m.InstanceEpoch)
						}
						if m.Seq > 0 {
							seqs = append(seqs, m.Seq)
						}
						if cm := m.GetCommit(); cm != nil && cm.Facts[0].Key >= "live" {
							keys = append(keys, cm.Facts[0].Key)
						}
						if m.GetCaughtUp() != nil {
							caught = true
							publish(t, c, fact("a/1", "live1", 0))
							publish(t, c, fact("a/1", "live2", 0))
						}
					}
					_ = s.Close()
					if !increasing(seqs) || fmt.Sprint(keys) != "[live1 live2]" {
						t.Fatalf("topics %v: seqs %v keys %v", topics, seqs, keys)
					}
					if topics == nil {
						if !equalSeqs(seqs, span(before+1, head+2)) {
							t.Fatalf("seqs %v, want %d..%d", seqs, before+1, head+2)
						}
						continue
					}
					for i := 1; i < 40; i += 2 { // every a/1 commit is there
						if !containsSeq(seqs, before+1+uint64(i)) {
							t.Fatalf("seqs %v lack the a/1 commit %d", seqs, before+1+uint64(i))
						}
					}
				}
			})
		}
	})
}

func containsSeq(seqs []uint64, x uint64) bool {
	for _, s := range seqs {
		if s == x {
			return true
		}
	}
	return false
}

func increasing(s []uint64) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}
