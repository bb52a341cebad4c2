package eventjson

import (
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// checkDecode compares UnmarshalPublish and UnmarshalPublishBatch with
// protojson on in: whatever they accept, protojson accepts too and decodes
// to an equal message. It returns whether the fast decoders accepted.
func checkDecode(t *testing.T, in []byte) bool {
	t.Helper()
	ok := checkDecoder(t, in, "UnmarshalPublish", UnmarshalPublish)
	okB := checkDecoder(t, in, "UnmarshalPublishBatch", UnmarshalPublishBatch)
	return ok || okB
}

func checkDecoder[T any, M interface {
	*T
	proto.Message
}](t *testing.T, in []byte, name string, fast func([]byte, M) bool) bool {
	t.Helper()
	got, want := M(new(T)), M(new(T))
	err := protojson.Unmarshal(in, want)
	// The request's buffer is reused once decoded: nothing decoded may
	// point into it.
	buf := slices.Clone(in)
	ok := fast(buf, got)
	for i := range buf {
		buf[i] = '#'
	}
	switch {
	case ok && err != nil:
		t.Fatalf("%s accepted what protojson refuses (%v): %q", name, err, in)
	case ok && !proto.Equal(got, want):
		t.Fatalf("%s(%q) = %v, protojson %v", name, in, got, want)
	}
	return ok
}

func TestUnmarshalPublishCases(t *testing.T) {
	accepted := []string{
		`{"facts":[{"topic":"bench/t","type":"bench","data":{"seq":1,"ts":1795926815436000000,"pad":"xxxx"}}]}`,
		` { "facts" : [ { "topic" : "a" , "type" : "b" , "key" : "k", "index": 3, "contentType": "x", "binaryData": "AAEC+v8=" } ] , "idempotencyKey": "k1" } `,
		`{"facts":[{"topic":"a","type":"b","binary_data":"AAEC-_8"}],"idempotency_key":"k"}`,
		`{"facts":[{"topic":"a","content_type":"c","data":{}}]}`,
		`{"facts":[{"data":{"a":[1,-2.5e-3,0,-0,1E+2,true,false,null,"s",{"b":[]},[]],"":"empty key"}}]}`,
		`{"facts":[{"topic":"q\"b\\s\/\b\f\n\r\t\u00e9\u0000\u20ac é😀"}]}`,
		`{"facts":[]}`,
		`{}`,
		`{"commits":[{"facts":[{"topic":"a","type":"b"}]},{"facts":[{"topic":"c","type":"d","data":{"x":1}}],"idempotencyKey":"k"}]}`,
		`{"commits":[]}`,
	}
	for _, in := range accepted {
		if !checkDecode(t, []byte(in)) {
			t.Errorf("declined %s", in)
		}
	}
	declined := []string{
		``, `null`, `[]`, `{"facts":null}`, `{"facts":[null]}`, `{"facts":[{"key":null}]}`,
		`{"facts":[],"facts":[]}`, `{"idempotencyKey":"a","idempotency_key":"b"}`,
		`{"facts":[{"data":{},"binaryData":""}]}`, `{"facts":[{"data":{"a":1,"a":2}}]}`,
		`{"facts":[{"index":"1"}]}`, `{"facts":[{"index":1.0}]}`, `{"facts":[{"index":4294967296}]}`, `{"facts":[{"index":-1}]}`,
		`{"facts":[{"data":{"a":01}}]}`, `{"facts":[{"data":{"a":1e400}}]}`, `{"facts":[{"data":{"a":.5}}]}`, `{"facts":[{"data":{"a":tru}}]}`,
		`{"facts":[{"topic":"\ud83d\ude00"}]}`, `{"facts":[{"topic":"a` + "\xff" + `"}]}`, `{"facts":[{"topic":"a` + "\n" + `"}]}`,
		`{"facts":[{"topic":"\x"}]}`, `{"unknown":1}`, `{"facts":[]} x`, `{"facts":[],}`, `{"facts":[{"binaryData":"!!"}]}`,
		`{"facts":[{"data":[]}]}`, `{"commits":[{"facts":[{"topic":1}]}]}`,
	}
	for _, in := range declined {
		var m ringcastv1.PublishRequest
		var mb ringcastv1.PublishBatchRequest
		if UnmarshalPublish([]byte(in), &m) || UnmarshalPublishBatch([]byte(in), &mb) {
			t.Errorf("accepted %q", in)
		}
		checkDecode(t, []byte(in))
	}
}

// TestUnmarshalPublishRandom decodes protojson's encodings (compact and
// indented) of generated requests, and mutations of them.
func TestUnmarshalPublishRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	accepted := 0
	for i := range 3000 {
		in := randomPublishJSON(rng)
		if checkDecode(t, in) {
			accepted++
		}
		for range 3 {
			m := append([]byte(nil), in...)
			if len(m) > 0 {
				m[rng.IntN(len(m))] = `{}[]",:0-1e.\ "nt`[rng.IntN(17)]
			}
			checkDecode(t, m)
		}
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
	t.Logf("%d of 3000 took the fast path", accepted)
	if accepted < 2500 {
		t.Fatalf("only %d of 3000 generated requests took the fast path", accepted)
	}
}

func FuzzUnmarshalPublish(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		f.Add(randomPublishJSON(rng))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecode(t, in) })
}

// randomPublishJSON is protojson's encoding of a generated Publish or
// PublishBatch request with valid UTF-8.
func randomPublishJSON(rng *rand.Rand) []byte {
	commit := func() *ringcastv1.PublishRequest {
		r := randomResponse(rng)
		p := &ringcastv1.PublishRequest{Facts: r.GetCommit().GetFacts(), IdempotencyKey: randomString(rng, 0)}
		return p
	}
	var m proto.Message = commit()
	if rng.IntN(3) == 0 {
		b := &ringcastv1.PublishBatchRequest{}
		for range 1 + rng.IntN(3) {
			b.Commits = append(b.Commits, commit())
		}
		m = b
	}
	o := protojson.MarshalOptions{UseProtoNames: rng.IntN(4) == 0}
	if rng.IntN(4) == 0 {
		o.Multiline = true
	}
	out, err := o.Marshal(m)
	if err != nil { // invalid UTF-8 or an unencodable number: try again
		return randomPublishJSON(rng)
	}
	return out
}

// BenchmarkUnmarshalPublish compares UnmarshalPublish with protojson on
// the request a load tool sends for one event.
func BenchmarkUnmarshalPublish(b *testing.B) {
	in := []byte(`{"facts":[{"topic":"bench/t","type":"bench","data":{"seq":1,"ts":1795926815436000000,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}]}`)
	b.Run("eventjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m ringcastv1.PublishRequest
			if !UnmarshalPublish(in, &m) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m ringcastv1.PublishRequest
			if err := protojson.Unmarshal(in, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
