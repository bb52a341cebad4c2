package natslog_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/store/storetest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// stores are the stores this package's contract rows run on: memory, and
// JetStream on an embedded nats-server of the server's own (--store
// embedded). Their configs are the conformance suite's (storetest.Config).
var stores = []ringtest.Store{ringtest.Memory, ringtest.Embedded}

func forEachStoreAndProtocol(t *testing.T, f func(t *testing.T, store string, cfg app.Config, p ringcast.Protocol)) {
	storetest.ForEachStoreAndProtocol(t, stores, func(t *testing.T, st ringtest.Store, cfg app.Config, p ringcast.Protocol) {
		f(t, st.Name, cfg, p)
	})
}

// The suite's helpers, as this package's rows call them.
var (
	rpcPublish = storetest.Publish
	read       = storetest.Read
	sseUntil   = storetest.SSEUntil
	positions  = storetest.Positions
)

// TestEmbeddedPassesTheSuite runs the stream contract on the embedded
// store (memory and JetStream on a shared nats-server run it in
// storetest).
func TestEmbeddedPassesTheSuite(t *testing.T) {
	storetest.Run(t, ringtest.Embedded)
}

// TestCursorFromOneReplicaResumesOnAnother: two ringcast replicas on one
// JetStream stream share the epoch and the seqs. A cursor (and an SSE
// Last-Event-ID) from replica A resumes on replica B with no resync, no
// loss and no duplicate, and commits published through either reach both.
func TestCursorFromOneReplicaResumesOnAnother(t *testing.T) {
	ns, _ := embedded(t, t.TempDir())
	a, b := replicaServer(t, ns, 4), replicaServer(t, ns, 4)
	if a.Hub().Epoch() != b.Hub().Epoch() {
		t.Fatalf("replicas' epochs differ: %x, %x", a.Hub().Epoch(), b.Hub().Epoch())
	}
	epoch := a.Hub().Epoch()
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			ca, cb := a.Client(p), b.Client(p)
			var seqs []uint64
			for i := range 6 {
				c := ca
				if i%2 == 1 {
					c = cb
				}
				seqs = append(seqs, rpcPublish(t, c, "", fact("g/a", "k", i)).Seq)
			}
			// CaughtUp is relative to what the replica has received: let
			// both receive the last commit first.
			for _, r := range []*ringtest.Server{a, b} {
				for r.Hub().Status().HeadSeq < seqs[5] {
					time.Sleep(5 * time.Millisecond)
				}
			}
			for _, c := range []ringcastv1connect.EventServiceClient{ca, cb} {
				commits, msgs := read(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[0], InstanceEpoch: epoch, EndAtHead: true}, nil)
				if !equal(commits, seqs[1:]) || msgs[len(msgs)-1].GetCaughtUp() == nil {
					t.Fatalf("resume after %d: commits %v, want %v then CaughtUp", seqs[0], commits, seqs[1:])
				}
			}
			ids := sseUntil(t, b.URL, sse.FormatID(epoch, seqs[0], 0), sse.FormatID(epoch, seqs[5], 0))
			var want []string
			for _, s := range seqs[1:] {
				want = append(want, sse.FormatID(epoch, s, 0))
			}
			if fmt.Sprint(positions(ids)) != fmt.Sprint(want) {
				t.Fatalf("SSE on B after A's id %d: %v, want %v", seqs[0], ids, want)
			}
			// Each commit's fingerprint is the same on both replicas: A's
			// ids, fingerprints included, resume on B.
			idsA := sseUntil(t, a.URL, sse.FormatID(epoch, seqs[0], 0), sse.FormatID(epoch, seqs[5], 0))
			if fmt.Sprint(idsA) != fmt.Sprint(ids) {
				t.Fatalf("SSE ids with fingerprints: A %v, B %v", idsA, ids)
			}
			if got := sseUntil(t, b.URL, idsA[0], sse.FormatID(epoch, seqs[5], 0)); fmt.Sprint(got) != fmt.Sprint(ids[1:]) {
				t.Fatalf("SSE on B after A's id %s: %v, want %v", idsA[0], got, ids[1:])
			}
		})
	}
}
