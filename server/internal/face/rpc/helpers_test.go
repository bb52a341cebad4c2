package rpc_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(ringtest.Main(m)) }

// forEachProtocol runs f once per protocol.
func forEachProtocol(t *testing.T, f func(t *testing.T, p ringcast.Protocol)) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) { f(t, p) })
	}
}

// forEachStoreAndProtocol runs f once per store and protocol, in subtests
// named store/protocol (`-run '/jetstream/grpc'`); f starts its own server
// with store.Start.
func forEachStoreAndProtocol(t *testing.T, f func(t *testing.T, store ringtest.Store, p ringcast.Protocol)) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) { f(t, store, p) })
	})
}

// fact returns a fact on topic with a small struct payload.
func fact(topic, key string, n int) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"n": float64(n)})
	return &ringcastv1.Fact{Topic: topic, Type: "test.fact", Key: key, Payload: &ringcastv1.Fact_Data{Data: s}}
}

// publish appends one commit of facts and returns its seq.
func publish(t *testing.T, c ringcastv1connect.EventServiceClient, facts ...*ringcastv1.Fact) uint64 {
	t.Helper()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts}))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res.Msg.Seq
}

// publishN appends n one-fact commits on topic and returns the last seq.
func publishN(t *testing.T, c ringcastv1connect.EventServiceClient, topic string, n int) uint64 {
	t.Helper()
	var seq uint64
	for i := range n {
		seq = publish(t, c, fact(topic, "", i))
	}
	return seq
}

// stream is an open SubscribeEvents call with a deadline.
type stream struct {
	t      *testing.T
	s      *connect.ServerStreamForClient[ringcastv1.SubscribeEventsResponse]
	cancel context.CancelFunc
	last   *ringcastv1.SubscribeEventsResponse // the last message received
}

func subscribe(t *testing.T, c ringcastv1connect.EventServiceClient, req *ringcastv1.SubscribeEventsRequest) *stream {
	t.Helper()
	// A hang guard only: on a busy machine a stream that carries a large
	// backlog under -race can take tens of seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := c.SubscribeEvents(ctx, connect.NewRequest(req))
	if err != nil {
		cancel()
		t.Fatalf("subscribe: %v", err)
	}
	st := &stream{t: t, s: s, cancel: cancel}
	t.Cleanup(st.close)
	return st
}

func (st *stream) close() {
	st.cancel()
	_ = st.s.Close()
}

// next returns the next message, failing the test if the stream ended; the
// failure names how it ended: its error, or for an OK end the last message
// (a ResyncRequired, say).
func (st *stream) next() *ringcastv1.SubscribeEventsResponse {
	st.t.Helper()
	if !st.s.Receive() {
		if err := st.s.Err(); err != nil {
			st.t.Fatalf("stream ended early with %v (last message: %v)", err, st.last)
		}
		st.t.Fatalf("stream ended early with an OK status; its last message: %v", st.last)
	}
	st.last = st.s.Msg()
	return st.last
}

// until reads messages up to and including the first one ok accepts.
func (st *stream) until(ok func(*ringcastv1.SubscribeEventsResponse) bool) []*ringcastv1.SubscribeEventsResponse {
	st.t.Helper()
	var got []*ringcastv1.SubscribeEventsResponse
	for {
		m := st.next()
		got = append(got, m)
		if ok(m) {
			return got
		}
	}
}

// rest reads until the stream ends and requires an OK end.
func (st *stream) rest() []*ringcastv1.SubscribeEventsResponse {
	st.t.Helper()
	var got []*ringcastv1.SubscribeEventsResponse
	for st.s.Receive() {
		got = append(got, st.s.Msg())
	}
	if err := st.s.Err(); err != nil {
		st.t.Fatalf("stream ended with %v, want OK", err)
	}
	return got
}

func isCaughtUp(m *ringcastv1.SubscribeEventsResponse) bool { return m.GetCaughtUp() != nil }

// positioned returns the seqs of the positioned messages, checking that
// they strictly increase and that unpositioned ones carry seq 0. A
// ServerStatus is positioned on the memory store only (docs/protocol.md,
// "Stores").
func positioned(t *testing.T, store ringtest.Store, msgs []*ringcastv1.SubscribeEventsResponse) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, m := range msgs {
		if m.GetServerStatus() != nil && store.Durable {
			if m.Seq != 0 {
				t.Fatalf("ServerStatus with seq %d on a durable store, want 0: %v", m.Seq, m)
			}
			continue
		}
		switch m.Event.(type) {
		case *ringcastv1.SubscribeEventsResponse_Commit, *ringcastv1.SubscribeEventsResponse_ServerStatus, *ringcastv1.SubscribeEventsResponse_Progress:
			if m.Seq == 0 {
				t.Fatalf("positioned message with seq 0: %v", m)
			}
			if len(seqs) > 0 && m.Seq <= seqs[len(seqs)-1] {
				t.Fatalf("seq %d after %d: not strictly increasing", m.Seq, seqs[len(seqs)-1])
			}
			seqs = append(seqs, m.Seq)
		default:
			if m.Seq != 0 {
				t.Fatalf("unpositioned message with seq %d: %v", m.Seq, m)
			}
		}
	}
	return seqs
}

// afterStatus returns the messages of a stream after the replica's
// unpositioned ServerStatus a durable store sends first (docs/protocol.md,
// "Stores"), failing when it is missing; on memory it returns msgs.
func afterStatus(t *testing.T, store ringtest.Store, msgs []*ringcastv1.SubscribeEventsResponse) []*ringcastv1.SubscribeEventsResponse {
	t.Helper()
	if !store.Durable {
		return msgs
	}
	if len(msgs) == 0 || msgs[0].GetServerStatus() == nil || msgs[0].Seq != 0 {
		t.Fatalf("stream on a durable store starts with %v, want the replica's ServerStatus with seq 0", msgs)
	}
	return msgs[1:]
}

// bound prepends, on memory, the bind ServerStatus's seq 1 to the
// positioned seqs a stream delivers from a fresh server's start; a durable
// store positions commits only.
func bound(store ringtest.Store, seqs ...uint64) []uint64 {
	if store.Durable {
		return seqs
	}
	return append([]uint64{1}, seqs...)
}

// waitOldest waits until the server reports oldest as the first servable
// seq. A durable store's first seq moves as the stream's limits discard
// commits, and the hub learns it when it next asks the stream (about every
// second); memory reports its ring's at once.
func waitOldest(t *testing.T, srv *ringtest.Server, oldest uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for {
		got, _ := srv.Hub().Bounds()
		if got == oldest {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("oldest seq %d, want %d", got, oldest)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// span returns [from, to].
func span(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func equalSeqs(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// smallBufferClient returns a client whose connections have a 64 KiB
// receive buffer (no autotuning), so a stream it stops reading blocks the
// server's writes after a few hundred KiB instead of tens of MiB.
func smallBufferClient(url string, p ringcast.Protocol) ringcastv1connect.EventServiceClient {
	hc := ringcast.NewHTTPClient(p)
	tr := hc.Transport.(*http.Transport)
	dialer := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			err = conn.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return conn, err
	}
	return ringcast.NewClient(url, ringcast.WithProtocol(p), ringcast.WithHTTPClient(hc)).RPC()
}
