package rpc_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// nested returns JSON data nesting depth objects and arrays (the outer
// object is level 1).
func nested(depth int) string {
	var b strings.Builder
	b.WriteString(`{"a":`)
	for i := 1; i < depth; i++ {
		if i%2 == 1 {
			b.WriteString(`[`)
		} else {
			b.WriteString(`{"a":`)
		}
	}
	b.WriteString(`1`)
	for i := depth - 1; i >= 1; i-- {
		if i%2 == 1 {
			b.WriteString(`]`)
		} else {
			b.WriteString(`}`)
		}
	}
	b.WriteString(`}`)
	return b.String()
}

// postJSON publishes body as Connect JSON and returns the status and body.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/ringcast.v1.EventService/Publish", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readAll subscribes from the start with the Go client over p and returns
// every fact up to head, failing on any error.
func readAll(t *testing.T, srv *ringtest.Server, p ringcast.Protocol) []ringcast.Item {
	t.Helper()
	c := ringcast.NewClient(srv.URL, ringcast.WithProtocol(p), ringcast.WithHTTPClient(srv.HTTPClient(p)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var facts []ringcast.Item
	for it, err := range c.Subscribe(ringcast.WithEndAtHead()).Items(ctx) {
		if err != nil {
			t.Fatalf("%s subscriber: %v", p, err)
		}
		if it.Kind == ringcast.KindFact {
			facts = append(facts, it)
		}
	}
	return facts
}

// TestDeeplyNestedDataIsRefusedAndSubscribersKeepWorking: a fact whose data
// nests 3,500 levels (a poison pill every protobuf decoder refuses) is
// refused with invalid_argument naming the fact and the limit, on Connect
// JSON and on binary protobuf; every Go subscriber then still reads the
// ring, on all three protocols.
func TestDeeplyNestedDataIsRefusedAndSubscribersKeepWorking(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		ok := `{"facts":[{"topic":"a/b","type":"t","key":"k","data":` + nested(32) + `}]}`
		if code, body := postJSON(t, srv.URL, ok); code != http.StatusOK {
			t.Fatalf("32 levels: %d %s, want 200", code, body)
		}
		for _, depth := range []int{33, 3500} {
			body := `{"facts":[{"topic":"a/b","type":"t","key":"k","data":{"n":1}},{"topic":"a/b","type":"t","key":"k","data":` + nested(depth) + `}]}`
			code, msg := postJSON(t, srv.URL, body)
			if code != http.StatusBadRequest || !strings.Contains(msg, "invalid_argument") || !strings.Contains(msg, "facts[1]") || !strings.Contains(msg, "32 levels") {
				t.Fatalf("%d levels: %d %s, want 400 invalid_argument naming facts[1] and the limit of 32 levels", depth, code, msg)
			}
		}
		// The same poison in binary protobuf, built from the JSON.
		var req ringcastv1.PublishRequest
		if err := protojson.Unmarshal([]byte(`{"facts":[{"topic":"a/b","type":"t","data":`+nested(40)+`}]}`), &req); err != nil {
			t.Fatal(err)
		}
		for _, p := range ringtest.Protocols {
			_, err := srv.Client(p).Publish(context.Background(), connect.NewRequest(&req))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "facts[0].data") {
				t.Fatalf("%s: binary poison: %v, want invalid_argument naming facts[0].data", p, err)
			}
		}
		for _, p := range ringtest.Protocols {
			if got := readAll(t, srv, p); len(got) != 1 {
				t.Fatalf("%s: read %d facts, want the one accepted", p, len(got))
			}
		}
	})
}

// TestOversizedFactIsRefused: a fact over max-fact-bytes is refused with
// invalid_argument naming its index and the limit, whatever the request
// size limit allows; one just under it is accepted.
func TestOversizedFactIsRefused(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		srv := store.Start(t, cfg)
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
			c := srv.Client(p)
			small := fact("a/b", "", 0)
			big := fact("a/b", "", 1)
			big.Payload = &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{7}, 64<<10)}
			_, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{small, big}}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "facts[1]") || !strings.Contains(err.Error(), "65536") {
				t.Fatalf("64 KiB of binary data: %v, want invalid_argument naming facts[1] and 65536", err)
			}
			big.Payload = &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{7}, 64<<10-64)}
			publish(t, c, big)
		})
	})
}

// TestDedupeTableFullOfLiveKeysRefusesNewKeys: with every remembered key
// still inside its window, a new key is refused with resource_exhausted
// (nothing appended) instead of being appended without dedupe; a retry of
// a remembered key still gets its receipt, and the refusal carries a
// Retry-After on every protocol. On a durable store the stream's
// duplicate window deduplicates, not the hub's table: the new key is
// appended, and its retry is a duplicate (docs/scaling.md).
func TestDedupeTableFullOfLiveKeysRefusesNewKeys(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.DedupeKeys = 4
		cfg.DedupeKeysPerClient = -1 // one client may fill it (TestOneClientCannotFillTheDedupeTable)
		srv := store.Start(t, cfg)
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
			c := ringcast.NewClient(srv.URL, ringcast.WithProtocol(p), ringcast.WithHTTPClient(srv.HTTPClient(p)))
			ctx := context.Background()
			prefix := string(p)
			if p == ringcast.ProtocolConnect {
				for i := range 4 {
					if _, err := c.Publish(ctx, []*ringcastv1.Fact{fact("a/b", "", i)}, fmt.Sprintf("key-%d", i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, before := srv.Hub().Bounds()
			r, err := c.Publish(ctx, []*ringcastv1.Fact{fact("a/b", "", 9)}, prefix+"-new")
			if store.Durable {
				if err != nil || r.Duplicate || r.Seq != before+1 {
					t.Fatalf("new key with a full table on a durable store: %v %v, want appended at %d", r, err, before+1)
				}
				again, err := c.Publish(ctx, []*ringcastv1.Fact{fact("a/b", "", 9)}, prefix+"-new")
				if err != nil || !again.Duplicate || again.Seq != r.Seq {
					t.Fatalf("retry of the new key: %v %v, want a duplicate of %d", again, err, r.Seq)
				}
			} else {
				if connect.CodeOf(err) != connect.CodeResourceExhausted {
					t.Fatalf("new key with a full table: %v, want resource_exhausted", err)
				}
				checkRetryAfter(t, err, 600)
				if _, head := srv.Hub().Bounds(); head != before {
					t.Fatalf("refused publish appended: head %d -> %d", before, head)
				}
			}
			r, err = c.Publish(ctx, []*ringcastv1.Fact{fact("a/b", "", 0)}, "key-0")
			if err != nil || !r.Duplicate {
				t.Fatalf("retry of a remembered key: %v %v, want its receipt", r, err)
			}
		})
		want := uint64(3)
		if store.Durable {
			want = 0
		}
		if got := srv.Hub().DedupeRefusals(); got != want {
			t.Fatalf("DedupeRefusals = %d, want %d", got, want)
		}
	})
}

// TestRingBoundedByBytesReportsEffectiveWindow: large commits make the ring
// drop its oldest events long before --window is reached; ServerStatus
// reports the effective window, the bytes held and the bound, and a cursor
// before the effective window resyncs as too old. On a durable store the
// ring is a cache: the servable range stays the stream's.
func TestRingBoundedByBytesReportsEffectiveWindow(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Window = 1024
		cfg.MaxRingBytes = 1 << 20
		srv := store.Start(t, cfg)
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
			c := srv.Client(p)
			var first, last uint64
			for i := range 20 {
				facts := make([]*ringcastv1.Fact, 4)
				for j := range facts {
					facts[j] = fact("a/b", "", i)
					facts[j].Payload = &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{byte(i)}, 60<<10)}
				}
				last = publish(t, c, facts...)
				if i == 0 {
					first = last
				}
			}
			res, err := c.GetServerStatus(context.Background(), connect.NewRequest(&ringcastv1.GetServerStatusRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			st := res.Msg.GetStatus()
			if st.GetRingBytes() == 0 || st.GetRingBytes() > 1<<20 || st.GetLimits().GetMaxRingBytes() != 1<<20 || st.GetWindow() != 1024 {
				t.Fatalf("ring_bytes %d, max_ring_bytes %d, window %d", st.GetRingBytes(), st.GetLimits().GetMaxRingBytes(), st.GetWindow())
			}
			if store.Durable {
				// The ring is only a cache: the servable range is the
				// stream's, which holds every commit, and a cursor older
				// than the ring reads on from the stream.
				if st.GetHeadSeq() != last || st.GetOldestSeq() != 1 {
					t.Fatalf("servable range [%d, %d], want the stream's [1, %d]", st.GetOldestSeq(), st.GetHeadSeq(), last)
				}
				got := afterStatus(t, store, subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: first, InstanceEpoch: st.GetInstanceEpoch(), EndAtHead: true}).rest())
				if seqs := positioned(t, store, got); !equalSeqs(seqs, span(first+1, last)) || !isCaughtUp(got[len(got)-1]) {
					t.Fatalf("resume from before the ring: seqs %v, want %d..%d then CaughtUp", seqs, first+1, last)
				}
				return
			}
			if st.GetHeadSeq() != last || st.GetHeadSeq()-st.GetOldestSeq()+1 > 5 || st.GetOldestSeq() <= last-20 {
				t.Fatalf("effective window [%d, %d] after 20 commits of 240 KB under 1 MiB", st.GetOldestSeq(), st.GetHeadSeq())
			}
			got := subscribe(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: st.GetOldestSeq() - 2, InstanceEpoch: st.GetInstanceEpoch()}).rest()
			if len(got) != 1 || got[0].GetResyncRequired().GetReason() != ringcastv1.Reason_REASON_CURSOR_TOO_OLD {
				t.Fatalf("cursor before the effective window: %v, want ResyncRequired(CURSOR_TOO_OLD)", got)
			}
		})
	})
}
