package rpc_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestPublishDecodesWithTSClient extends FuzzPublishDeliverable to the
// TypeScript client: its seed corpus and a few hundred generated inputs
// the server accepts (nesting up to the limit, unicode, extreme numbers,
// empty objects and arrays, binary data) are published, each commit is
// read back as sent on every face — Connect in binary (the bytes gRPC and
// gRPC-Web carry too) and JSON, and the SSE event's id and data — and node
// decodes every response once with the TS client's default codecs
// (clients/ts/scripts/decode-faces.ts; an SSE event's seq and epoch from
// its id). Each must decode, and to the message the Go codecs decode from
// the same bytes; the SSE event to the commit Connect sent.
func TestPublishDecodesWithTSClient(t *testing.T) {
	tsDir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "clients", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the TypeScript client's codecs are not checked (install Node 20+, then `go tool task deps:npm`)")
	}
	if _, err := os.Stat(filepath.Join(tsDir, "node_modules")); err != nil {
		t.Skip("clients/ts/node_modules is missing: the TypeScript client's codecs are not checked (run `go tool task deps:npm`)")
	}

	inputs := publishSeeds(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		inputs = append(inputs, generatedPublish(t, rng, i))
	}

	cfg := ringtest.Config()
	cfg.Window = 4096
	srv := ringtest.Start(t, cfg)
	hc := &http.Client{Timeout: 20 * time.Second}
	type item struct {
		Face string `json:"face"`
		Data string `json:"data"`
		ID   string `json:"id,omitempty"`
		name string
		raw  []byte
		// connect is, for an SSE event, the commit as Connect sent it
		// in binary.
		connect []byte
	}
	var items []item
	accepted := 0
	for i, in := range inputs {
		cur, ok := publishRaw(t, hc, srv.URL, in)
		if !ok {
			continue
		}
		accepted++
		var connectCommit []byte
		for _, codec := range []string{"proto", "json"} {
			for j, msg := range connectStreamRaw(t, hc, srv.URL, cur, codec) {
				data := string(msg)
				if codec == "proto" {
					data = base64.StdEncoding.EncodeToString(msg)
					var m ringcastv1.SubscribeEventsResponse
					if proto.Unmarshal(msg, &m) == nil && m.GetCommit() != nil && m.GetSeq() == cur.Seq+1 {
						connectCommit = msg
					}
				}
				items = append(items, item{Face: codec, Data: data, name: fmt.Sprintf("input %d, connect+%s response %d", i, codec, j), raw: msg})
			}
		}
		if connectCommit == nil {
			t.Fatalf("input %d: connect+proto did not send commit %d", i, cur.Seq+1)
		}
		id, data := sseCommitData(t, hc, srv.URL, cur)
		items = append(items, item{Face: "sse", Data: data, ID: id, name: fmt.Sprintf("input %d, sse commit", i), raw: []byte(data), connect: connectCommit})
	}
	if generated := accepted - (len(inputs) - 300); generated < 250 {
		t.Fatalf("only %d of 300 generated inputs were accepted: the generator no longer makes what the server takes", generated)
	}

	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--import", "tsx", "scripts/decode-faces.ts", in, out)
	cmd.Dir = tsDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node scripts/decode-faces.ts: %v\n%s", err, msg)
	}
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		OK    bool            `json:"ok"`
		JSON  json.RawMessage `json:"json"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(b, &results); err != nil || len(results) != len(items) {
		t.Fatalf("decode-faces.ts wrote %d results for %d items: %v", len(results), len(items), err)
	}
	failures := 0
	for i, r := range results {
		it := items[i]
		goMsg := &ringcastv1.SubscribeEventsResponse{}
		var tsMsg ringcastv1.SubscribeEventsResponse
		var goErr error
		switch it.Face {
		case "proto":
			goErr = proto.Unmarshal(it.raw, goMsg)
		case "sse":
			goMsg, goErr = sseMessage(it.ID, it.Data)
		default:
			goErr = protojson.Unmarshal(it.raw, goMsg)
		}
		var problem string
		switch {
		case goErr != nil:
			problem = "Go cannot decode it: " + goErr.Error()
		case !r.OK:
			problem = "the TS client cannot decode it: " + r.Error
		default:
			if err := protojson.Unmarshal(r.JSON, &tsMsg); err != nil {
				problem = "the TS client's toJson is not proto JSON: " + err.Error()
			} else if !proto.Equal(goMsg, &tsMsg) {
				problem = fmt.Sprintf("TS decoded %v, Go %v", &tsMsg, goMsg)
			} else if it.connect != nil {
				var want ringcastv1.SubscribeEventsResponse
				if err := proto.Unmarshal(it.connect, &want); err != nil || !proto.Equal(goMsg, &want) {
					problem = fmt.Sprintf("the SSE event with its id's position is %v, Connect sent %v (%v)", goMsg, &want, err)
				}
			}
		}
		if problem != "" {
			if failures++; failures <= 10 {
				t.Errorf("%s: %s (%.300s)", it.name, problem, it.Data)
			}
		}
	}
	t.Logf("%d inputs (%d accepted), %d responses decoded by the TS client, %d failures", len(inputs), accepted, len(items), failures)
}

// publishRaw publishes in and returns the cursor before its commit, or
// false when the server refused it (never with a 5xx).
func publishRaw(t *testing.T, hc *http.Client, base string, in publishSeed) (ringcast.Cursor, bool) {
	t.Helper()
	ctype, unmarshal := "application/json", protojson.Unmarshal
	if in.binary {
		ctype, unmarshal = "application/proto", proto.Unmarshal
	}
	resp, err := hc.Post(base+ringcastv1connect.EventServicePublishProcedure, ctype, bytes.NewReader(in.body))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Fatalf("publish answered %d: %s", resp.StatusCode, out)
	}
	if resp.StatusCode != http.StatusOK {
		return ringcast.Cursor{}, false
	}
	var receipt ringcastv1.PublishResponse
	if err := unmarshal(out, &receipt); err != nil {
		t.Fatalf("receipt %q: %v", out, err)
	}
	return ringcast.Cursor{Epoch: receipt.InstanceEpoch, Seq: receipt.Seq - 1}, !receipt.Duplicate
}

// connectStreamRaw reads SubscribeEvents from cur to the commit after it
// over the Connect protocol with codec (proto or json) and returns every
// response message as the server sent it.
func connectStreamRaw(t *testing.T, hc *http.Client, base string, cur ringcast.Cursor, codec string) [][]byte {
	t.Helper()
	req := &ringcastv1.SubscribeEventsRequest{SinceSeq: cur.Seq, InstanceEpoch: cur.Epoch, UntilSeq: cur.Seq + 1}
	marshal := proto.Marshal
	if codec == "json" {
		marshal = protojson.Marshal
	}
	msg, err := marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	body := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+ringcastv1connect.EventServiceSubscribeEventsProcedure, bytes.NewReader(body))
	hreq.Header.Set("Content-Type", "application/connect+"+codec)
	resp, err := hc.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("connect+%s stream: %d %s", codec, resp.StatusCode, b)
	}
	var msgs [][]byte
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(resp.Body, hdr[:]); err != nil {
			t.Fatalf("connect+%s stream ended without its end message: %v", codec, err)
		}
		payload := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
		if _, err := io.ReadFull(resp.Body, payload); err != nil {
			t.Fatalf("connect+%s stream: %v", codec, err)
		}
		if hdr[0]&0x02 != 0 { // end of stream: JSON, with "error" if it failed
			var end struct{ Error json.RawMessage }
			if err := json.Unmarshal(payload, &end); err != nil || end.Error != nil {
				t.Fatalf("connect+%s stream ended with %s", codec, payload)
			}
			return msgs
		}
		msgs = append(msgs, payload)
	}
}

// generatedPublish is a Publish the server accepts: one to three facts of
// structured data (nesting up to the 32-level limit, unicode strings and
// keys, extreme finite numbers, empty objects and arrays) or binary data;
// one in four is sent as binary protobuf, the rest as Connect JSON.
func generatedPublish(t *testing.T, rng *rand.Rand, i int) publishSeed {
	t.Helper()
	var facts []any
	for range 1 + rng.IntN(3) {
		f := map[string]any{"topic": []string{"a/b", "gauges/g-1", "x"}[rng.IntN(3)], "type": "t"}
		if rng.IntN(2) == 0 {
			f["key"] = genString(rng)
		}
		switch rng.IntN(8) {
		case 0:
			bin := make([]byte, rng.IntN(64))
			for j := range bin {
				bin[j] = byte(rng.UintN(256))
			}
			f["binaryData"], f["contentType"] = base64.StdEncoding.EncodeToString(bin), "application/octet-stream"
		case 1:
			f["data"] = deepData(rng, 32) // the deepest allowed
		case 2:
			f["data"] = map[string]any{}
		default:
			f["data"] = genObject(rng, 1, 2+rng.IntN(30))
		}
		facts = append(facts, f)
	}
	body, err := json.Marshal(map[string]any{"facts": facts, "idempotencyKey": fmt.Sprintf("ts-%d", i)})
	if err != nil {
		t.Fatal(err)
	}
	if rng.IntN(4) != 0 {
		return publishSeed{body, false}
	}
	var m ringcastv1.PublishRequest
	if err := protojson.Unmarshal(body, &m); err != nil {
		t.Fatalf("generated input %d: %v", i, err)
	}
	b, _ := proto.Marshal(&m)
	return publishSeed{b, true}
}

// deepData nests objects and arrays depth levels deep (the object itself is
// level 1), with a unicode string and an extreme number at the bottom.
func deepData(rng *rand.Rand, depth int) map[string]any {
	var v any = []any{genString(rng), genNumber(rng)}
	for level := depth - 1; level > 1; level-- {
		if level%2 == 0 {
			v = map[string]any{genString(rng): v}
		} else {
			v = []any{v}
		}
	}
	return map[string]any{"deep": v}
}

// genObject is an object at nesting level (1: the data object) that may
// nest down to maxLevel.
func genObject(rng *rand.Rand, level, maxLevel int) map[string]any {
	o := map[string]any{}
	for range rng.IntN(5) {
		o[genString(rng)] = genValue(rng, level+1, maxLevel)
	}
	return o
}

func genValue(rng *rand.Rand, level, maxLevel int) any {
	n := 4
	if level < maxLevel {
		n = 6
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return genNumber(rng)
	case 3:
		return genString(rng)
	case 4:
		return genObject(rng, level, maxLevel)
	default:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = genValue(rng, level+1, maxLevel)
		}
		return a
	}
}

var extremeNumbers = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 1e308, -1e308, math.MaxFloat64, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, -(1<<53 + 2), 123456789.123456789, 2.2250738585072014e-308,
}

func genNumber(rng *rand.Rand) float64 {
	if rng.IntN(2) == 0 {
		return extremeNumbers[rng.IntN(len(extremeNumbers))]
	}
	return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(600)-300))
}

// unicodeRunes are the awkward ones: controls, JSON escapes, separators
// JavaScript treats as line ends, a BOM, non-characters, astral emoji
// (surrogate pairs in JavaScript strings) and the last code point.
var unicodeRunes = []rune{
	'a', 'Z', '0', ' ', '"', '\\', '/', '<', '&', 0x00, 0x08, 0x1f, 0x7f, 0x85, 0xa0, 0x2028, 0x2029,
	0xfeff, 0xfffd, 0xfffe, 0xffff, 'é', 'ß', '中', 'ק', 0x1f600, 0x1f469, 0x200d, 0x10ffff,
}

func genString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(12) {
		switch rng.IntN(4) {
		case 0:
			r := rune(rng.IntN(0xd800)) // below the surrogates
			b.WriteRune(r)
		case 1:
			b.WriteRune(rune(0x10000 + rng.IntN(0x100000))) // astral
		default:
			b.WriteRune(unicodeRunes[rng.IntN(len(unicodeRunes))])
		}
	}
	return b.String()
}
