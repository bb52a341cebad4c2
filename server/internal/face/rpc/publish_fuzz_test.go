package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// FuzzPublishDeliverable drives the whole publish path with arbitrary
// input: a Publish request body, as Connect JSON or binary protobuf, is
// decoded and validated by a real server and appended by its hub. The
// server must answer 200 or a client error (never 5xx, never a crash), and
// every commit it accepts must reach the Go client intact over each
// encoding — protobuf (Connect, gRPC, gRPC-Web), Connect JSON, and the SSE
// face's JSON decoded as a browser would (JSON.parse, then protojson) —
// with the same facts on every face, on every store (ringtest.Stores).
//
// The seed corpus runs in every `go test`; for a longer run:
//
//	go test ./server/internal/face/rpc -run '^$' -fuzz FuzzPublishDeliverable -fuzztime 5m
func FuzzPublishDeliverable(f *testing.F) {
	for _, seed := range publishSeeds(f) {
		f.Add(seed.body, seed.binary)
	}

	// One server per store, each with a commit before any the fuzzer
	// sends, so that every accepted commit has a cursor before it.
	hc := &http.Client{Timeout: 20 * time.Second}
	type target struct {
		store   string
		srv     *ringtest.Server
		jsonRPC ringcastv1connect.EventServiceClient
	}
	var targets []target
	for _, store := range ringtest.Stores {
		cfg := ringtest.Config()
		cfg.Window = 4
		srv := store.Start(f, cfg)
		if _, err := srv.Hub().Publish([]*ringcastv1.Fact{{Topic: "lead", Type: "t"}}, ""); err != nil {
			f.Fatal(err)
		}
		targets = append(targets, target{store.Name, srv, ringcastv1connect.NewEventServiceClient(hc, srv.URL, connect.WithProtoJSON())})
	}

	f.Fuzz(func(t *testing.T, body []byte, binary bool) {
		for _, tg := range targets {
			publishAndRead(t, hc, tg.store, tg.srv, tg.jsonRPC, body, binary)
		}
	})
}

// publishSeed is a Publish request body, Connect JSON or binary protobuf.
type publishSeed struct {
	body   []byte
	binary bool
}

// publishSeeds is FuzzPublishDeliverable's seed corpus (also run through
// the TypeScript client's codecs by TestPublishDecodesWithTSClient).
func publishSeeds(tb testing.TB) []publishSeed {
	seeds := []publishSeed{
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","key":"k","data":{"n":1,"s":"x","l":[1,{"b":true}],"z":null}}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","data":` + nested(32) + `}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","data":` + nested(33) + `}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","data":` + nested(3500) + `}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","data":{"s":"\u2028\u0000\ud83d\ude00","e":1e308,"m":-0}}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","binaryData":"AAEC","contentType":"application/cbor"}]}`), false},
		{[]byte(`{"facts":[{"topic":"a/b","type":"t","data":{"big":"` + strings.Repeat("x", 70000) + `"}}]}`), false},
	}
	for _, js := range []string{
		`{"facts":[{"topic":"a/b","type":"t","key":"k","data":{"n":1,"l":[[]],"o":{}}},{"topic":"c","type":"u","binaryData":"/w=="}],"idempotencyKey":"i"}`,
		`{"facts":[{"topic":"a/b","type":"t","data":` + nested(40) + `}]}`,
	} {
		var m ringcastv1.PublishRequest
		if err := protojson.Unmarshal([]byte(js), &m); err != nil {
			tb.Fatal(err)
		}
		b, _ := proto.Marshal(&m)
		seeds = append(seeds, publishSeed{b, true})
	}
	return seeds
}

// publishAndRead publishes body to srv and, when it is accepted, reads the
// commit back on every face and checks they agree.
func publishAndRead(t *testing.T, hc *http.Client, store string, srv *ringtest.Server, jsonRPC ringcastv1connect.EventServiceClient, body []byte, binary bool) {
	t.Helper()
	ctype := "application/json"
	if binary {
		ctype = "application/proto"
	}
	resp, err := hc.Post(srv.URL+"/ringcast.v1.EventService/Publish", ctype, strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s: publish: %v", store, err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Fatalf("%s: publish answered %d: %s", store, resp.StatusCode, out)
	}
	if resp.StatusCode != http.StatusOK {
		t.Logf("%s: refused: %d %.200s", store, resp.StatusCode, out)
		return
	}
	var receipt ringcastv1.PublishResponse
	unmarshal := proto.Unmarshal
	if !binary {
		unmarshal = protojson.Unmarshal
	}
	if err := unmarshal(out, &receipt); err != nil {
		t.Fatalf("receipt %q: %v", out, err)
	}
	if receipt.Duplicate {
		return
	}
	seq := receipt.Seq
	cur := ringcast.Cursor{Epoch: receipt.InstanceEpoch, Seq: seq - 1}

	var want []*ringcastv1.Fact
	for _, p := range ringtest.Protocols {
		got := readCommit(t, ringcast.NewClient(srv.URL, ringcast.WithProtocol(p), ringcast.WithHTTPClient(srv.HTTPClient(p))), cur)
		if want == nil {
			want = got
		}
		sameFacts(t, store+"/"+string(p), got, want)
	}
	// Connect JSON, through the generated client with the JSON codec.
	sameFacts(t, store+"/connect+json", readCommitRPC(t, jsonRPC, cur), want)
	// The SSE face.
	sameFacts(t, store+"/sse", readSSECommit(t, hc, srv.URL, cur), want)
}

// readCommit reads commit cur.Seq+1 with the Go client library.
func readCommit(t *testing.T, c *ringcast.Client, cur ringcast.Cursor) []*ringcastv1.Fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var facts []*ringcastv1.Fact
	for it, err := range c.Subscribe(ringcast.WithCursor(cur), ringcast.WithUntil(cur.Seq+1)).Items(ctx) {
		if err != nil {
			t.Fatalf("subscriber: %v", err)
		}
		if it.Kind == ringcast.KindFact {
			facts = append(facts, it.Fact)
		}
	}
	return facts
}

// readCommitRPC reads commit cur.Seq+1 with a generated client.
func readCommitRPC(t *testing.T, c ringcastv1connect.EventServiceClient, cur ringcast.Cursor) []*ringcastv1.Fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.SubscribeEvents(ctx, connect.NewRequest(&ringcastv1.SubscribeEventsRequest{SinceSeq: cur.Seq, InstanceEpoch: cur.Epoch, UntilSeq: cur.Seq + 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var facts []*ringcastv1.Fact
	for s.Receive() {
		facts = append(facts, s.Msg().GetCommit().GetFacts()...)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("connect+json subscriber: %v", err)
	}
	return facts
}

// readSSECommit reads commit cur.Seq+1 from /events and decodes its data
// as a browser would: JSON.parse, then the proto JSON mapping.
func readSSECommit(t *testing.T, hc *http.Client, base string, cur ringcast.Cursor) []*ringcastv1.Fact {
	t.Helper()
	id, data := sseCommitData(t, hc, base, cur)
	var generic map[string]any
	if err := json.Unmarshal([]byte(data), &generic); err != nil {
		t.Fatalf("sse data is not JSON: %v", err)
	}
	m, err := sseMessage(id, data)
	if err != nil {
		t.Fatalf("sse commit: %v", err)
	}
	return m.GetCommit().GetFacts()
}

// sseMessage rebuilds the response an SSE event with an id carries
// (docs/sse.md, "The data line"): its data in proto JSON, less seq and
// instanceEpoch, which are taken from the id.
func sseMessage(id, data string) (*ringcastv1.SubscribeEventsResponse, error) {
	var m ringcastv1.SubscribeEventsResponse
	if err := protojson.Unmarshal([]byte(data), &m); err != nil {
		return nil, err
	}
	if m.Seq != 0 || m.InstanceEpoch != 0 || m.Fingerprint != 0 {
		return nil, fmt.Errorf("event %s repeats its position in its data", id)
	}
	epoch, seq, fp, err := sse.ParseLastEventID(id)
	if err != nil {
		return nil, err
	}
	m.Seq, m.InstanceEpoch, m.Fingerprint = seq, epoch, fp
	return &m, nil
}

// sseCommitData reads commit cur.Seq+1 from /events and returns its id
// and its data line as sent.
func sseCommitData(t *testing.T, hc *http.Client, base string, cur ringcast.Cursor) (id, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	req.Header.Set("Last-Event-ID", sse.FormatID(cur.Epoch, cur.Seq, cur.Fingerprint))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	id = sse.FormatID(cur.Epoch, cur.Seq+1, 0)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<22)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if line == "id: "+id || strings.HasPrefix(line, "id: "+id+"-") {
			id, found = strings.TrimPrefix(line, "id: "), true
			continue
		}
		if data, ok := strings.CutPrefix(line, "data: "); found && ok {
			return id, data
		}
	}
	t.Fatalf("sse: commit %d not received: %v", cur.Seq+1, sc.Err())
	return "", ""
}

func sameFacts(t *testing.T, face string, got, want []*ringcastv1.Fact) {
	t.Helper()
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%s: %d facts, want %d (> 0)", face, len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: fact %d = %v, want %v", face, i, got[i], want[i])
		}
	}
}
