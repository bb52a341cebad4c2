package sse

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/eventjson"
)

// The example of docs/sse.md: epoch 8c01c25dfcf75b03, in JSON
// "10088558349218437891".
const (
	docEpoch = 0x8c01c25dfcf75b03
	docTime  = "2026-11-30T04:33:35.436381742Z"
)

func docCommit(seq uint64, data map[string]any) *ringcastv1.SubscribeEventsResponse {
	d, err := structpb.NewStruct(data)
	if err != nil {
		panic(err)
	}
	ts := &timestamppb.Timestamp{Seconds: 1796013215, Nanos: 436381742}
	return &ringcastv1.SubscribeEventsResponse{
		Seq: seq, InstanceEpoch: docEpoch, EventTime: ts,
		Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{
			Facts: []*ringcastv1.Fact{{
				Index: 1, Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014",
				Payload: &ringcastv1.Fact_Data{Data: d},
			}},
			FactCount: 13,
		}},
	}
}

func mustFrame(t *testing.T, r *ringcastv1.SubscribeEventsResponse) string {
	t.Helper()
	b, err := frame(r)
	if err != nil {
		t.Fatalf("frame(%v): %v", r, err)
	}
	return string(b)
}

// TestCommitFrameGolden is the commit frame of docs/sse.md, byte for byte:
// the id carries the position, the data line the rest of the Connect JSON
// message in its field order.
func TestCommitFrameGolden(t *testing.T) {
	r := docCommit(42, map[string]any{"level_m": 1.42})
	if got := r.GetEventTime().AsTime().Format("2006-01-02T15:04:05.999999999Z"); got != docTime {
		t.Fatalf("eventTime %s, want %s", got, docTime)
	}
	const want = "id: 8c01c25dfcf75b03-42\n" +
		"event: commit\n" +
		`data: {"eventTime":"2026-11-30T04:33:35.436381742Z","commit":{"facts":[{"index":1,"topic":"gauges/ribble/g-014","type":"gauge.level","key":"g-014","data":{"level_m":1.42}}],"factCount":13}}` + "\n\n"
	if got := mustFrame(t, r); got != want {
		t.Errorf("commit frame:\n%s\nwant:\n%s", got, want)
	}
}

// dataLine returns the JSON of a frame's data line.
func dataLine(t *testing.T, f string) string {
	t.Helper()
	for _, line := range strings.Split(f, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return d
		}
	}
	t.Fatalf("frame without a data line: %q", f)
	return ""
}

// idLine returns the value of a frame's id line, "" without one.
func idLine(f string) string {
	for _, line := range strings.Split(f, "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			return v
		}
	}
	return ""
}

// TestPositionInTheIDOnly: every positioned frame — commits and progress
// by eventjson, status and deeply nested commits by protojson — has
// id = FormatID(epoch, seq) and data without seq or instanceEpoch, which
// parses, with the id's position set, into the response; unpositioned
// frames (caught-up, gap) keep instanceEpoch. No response is changed by
// being framed: a ring event's response is shared with the other faces.
func TestPositionInTheIDOnly(t *testing.T) {
	deep := map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": 1.0}}}}
	if _, ok := eventjson.OnStack.Append(nil, docCommit(7, deep)); ok {
		t.Fatal("the deep commit is encoded on the stack; make it deeper so the protojson path is tested")
	}
	ts := timestamppb.New(docCommit(1, nil).GetEventTime().AsTime())
	positioned := map[string]*ringcastv1.SubscribeEventsResponse{
		"commit":      docCommit(42, map[string]any{"level_m": 1.42}),
		"deep commit": docCommit(7, deep),
		"progress": {Seq: 57, InstanceEpoch: docEpoch, EventTime: ts,
			Event: &ringcastv1.SubscribeEventsResponse_Progress{Progress: &ringcastv1.Progress{}}},
		"status": {Seq: 1, InstanceEpoch: docEpoch, EventTime: ts,
			Event: &ringcastv1.SubscribeEventsResponse_ServerStatus{ServerStatus: &ringcastv1.ServerStatus{InstanceEpoch: docEpoch, State: ringcastv1.ServerState_SERVER_STATE_SERVING}}},
	}
	for name, r := range positioned {
		t.Run(name, func(t *testing.T) {
			orig := proto.Clone(r)
			f := mustFrame(t, r)
			if got, want := idLine(f), FormatID(docEpoch, r.GetSeq(), r.GetFingerprint()); got != want {
				t.Errorf("id %q, want %q", got, want)
			}
			d := dataLine(t, f)
			var top map[string]json.RawMessage
			if err := json.Unmarshal([]byte(d), &top); err != nil {
				t.Fatalf("data %s: %v", d, err)
			}
			if _, seq := top["seq"]; seq || top["instanceEpoch"] != nil {
				t.Errorf("data repeats the id's position: %s", d)
			}
			var m ringcastv1.SubscribeEventsResponse
			if err := protojson.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data %s: %v", d, err)
			}
			m.Seq, m.InstanceEpoch = r.GetSeq(), docEpoch
			if !proto.Equal(&m, r) {
				t.Errorf("data with the id's position = %v, want %v", &m, r)
			}
			if !proto.Equal(r, orig) {
				t.Errorf("framing changed the response: %v, was %v", r, orig)
			}
		})
	}

	unpositioned := map[string]*ringcastv1.SubscribeEventsResponse{
		"caught-up": {InstanceEpoch: docEpoch, EventTime: ts,
			Event: &ringcastv1.SubscribeEventsResponse_CaughtUp{CaughtUp: &ringcastv1.CaughtUp{HeadSeq: 57, HeartbeatInterval: durationpb.New(15e9)}}},
		"gap": {InstanceEpoch: docEpoch, EventTime: ts,
			Event: &ringcastv1.SubscribeEventsResponse_Gap{Gap: &ringcastv1.Gap{Reason: ringcastv1.Reason_REASON_CURSOR_TOO_OLD, RequestedSeq: 5, OldestSeq: 1030, HeadSeq: 2053}}},
	}
	for name, r := range unpositioned {
		t.Run(name, func(t *testing.T) {
			f := mustFrame(t, r)
			if id := idLine(f); id != "" {
				t.Errorf("unpositioned frame with id %q", id)
			}
			if d := dataLine(t, f); !strings.HasPrefix(d, `{"instanceEpoch":"10088558349218437891","eventTime":`) {
				t.Errorf("data %s, want the decimal instanceEpoch first", d)
			}
		})
	}
}

// TestCommitFrameSize measures the frame of a one-fact commit whose data
// is 100 bytes of JSON (docs/sse.md, "The data line"): the position is
// sent once, in the id, instead of also in the data.
func TestCommitFrameSize(t *testing.T) {
	r := docCommit(42, map[string]any{"pad": strings.Repeat("x", 90)}) // {"pad":"x…x"}: 100 bytes
	after := mustFrame(t, r)
	data, ok := eventjson.OnStack.Append(nil, r) // the data line with the position
	if !ok {
		t.Fatal("commit not encoded by eventjson")
	}
	before := "id: " + FormatID(docEpoch, 42, 0) + "\nevent: commit\ndata: " + string(data) + "\n\n"
	const position = `"seq":"42","instanceEpoch":"10088558349218437891",`
	if len(before)-len(after) != len(position) {
		t.Errorf("frame %d bytes with the position in its data, %d without; want %d fewer", len(before), len(after), len(position))
	}
	t.Logf("commit frame with a 100-byte payload: %d bytes with the position in its data, %d without", len(before), len(after))
}

// TestSizedFrameFitsItsBuffer: a ring event's frame is the frame, built in
// a buffer its protobuf size makes large enough (no copy on the way), for
// data from a few bytes to a few KiB, of strings or of numbers, and not
// so much larger that the cache copies it, but for small numbers.
func TestSizedFrameFitsItsBuffer(t *testing.T) {
	nums := map[string]any{}
	for i := range 64 {
		nums[strings.Repeat("k", i%5+1)+string(rune('a'+i%26))+string(rune('a'+i/26))] = float64(i) * 1.25
	}
	for name, data := range map[string]map[string]any{
		"tiny":    {"v": 1.0},
		"100B":    {"pad": strings.Repeat("x", 90)},
		"4KiB":    {"pad": strings.Repeat("x", 4096)},
		"numbers": nums,
	} {
		r := docCommit(1<<40, data)
		size := proto.Size(r)
		b, err := sizedFrame(r, size)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustFrame(t, r); string(b) != want {
			t.Errorf("%s: sizedFrame\n%s\nwant frame\n%s", name, b, want)
		}
		if c := frameOverhead + eventjson.SizeHint(size); cap(b) != c {
			t.Errorf("%s: a %d-byte frame outgrew its %d-byte buffer (protobuf size %d)", name, len(b), c, size)
		}
		// The ring's cache keeps a frame without copying it again unless
		// its buffer has a quarter and 64 bytes more room than it takes
		// (hub.Event.Cache); a frame of many small numbers is copied.
		if spare := cap(b) - len(b); (spare > len(b)/4+64) != (name == "numbers") {
			t.Errorf("%s: a %d-byte frame with %d bytes to spare", name, len(b), spare)
		}
	}
}
