package sse_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/sse"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestSnapshotCaughtUpLive(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		publish(t, h, "a/1", "b/1")
		publish(t, h, "a/2")

		s := open(t, srv.URL, "", "")
		if ct := s.resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("Content-Type = %q", ct)
		}
		for k, want := range map[string]string{"Cache-Control": "no-store", "X-Accel-Buffering": "no", "Access-Control-Allow-Origin": ""} {
			if got := s.resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		first := ringtest.Wait(t, s.events, waitFor, "the retry hint")
		ms, err := strconv.Atoi(first.Retry)
		if err != nil || ms < 1000 || ms > 2000 {
			t.Fatalf("first block %+v: want retry: 1000..2000", first)
		}

		// The status: at seq 1 on memory; on a durable store the
		// replica's, unpositioned, so without an id line.
		st := s.expect(names.EventStatus)
		statusSeq, statusID := uint64(1), id(h, 1)
		if store.Durable {
			statusSeq, statusID = 0, ""
		}
		if st.ID != statusID {
			t.Errorf("status id = %q, want %q", st.ID, statusID)
		}
		status := decode(t, st)
		if status.GetSeq() != statusSeq || status.GetInstanceEpoch() != h.Epoch() || status.GetServerStatus().GetState() != ringcastv1.ServerState_SERVER_STATE_SERVING {
			t.Errorf("status data = %s", st.Data)
		}
		fc := store.FirstCommit()
		c2 := s.expect(names.EventCommit)
		if c2.ID != id(h, fc) {
			t.Errorf("commit id = %q, want %q", c2.ID, id(h, fc))
		}
		d2 := decode(t, c2)
		facts := d2.GetCommit().GetFacts()
		if d2.GetSeq() != fc || d2.GetCommit().GetFactCount() != 2 || len(facts) != 2 || facts[1].GetTopic() != "b/1" || facts[1].GetIndex() != 1 || facts[0].GetData().AsMap()["n"] != float64(0) {
			t.Errorf("commit %d data = %s", fc, c2.Data)
		}
		if d2.GetEventTime() == nil {
			t.Errorf("commit %d without eventTime: %s", fc, c2.Data)
		}
		if c3 := s.expect(names.EventCommit); c3.ID != id(h, fc+1) {
			t.Errorf("commit id = %q, want %q", c3.ID, id(h, fc+1))
		}
		cu := s.expect(names.EventCaughtUp)
		if m := decode(t, cu); cu.ID != "" || m.GetSeq() != 0 || m.GetCaughtUp().GetHeadSeq() != fc+1 || m.GetInstanceEpoch() != h.Epoch() {
			t.Errorf("caught-up = %+v", cu)
		}

		seq := publish(t, h, "c/1")
		live := s.expect(names.EventCommit)
		if live.ID != id(h, seq) || decode(t, live).GetCommit().GetFacts()[0].GetTopic() != "c/1" {
			t.Errorf("live event %+v", live)
		}
	})
}

func TestLatestPerKeySnapshot(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		both := publish(t, h, "k/1", "k/2") // 2 on memory, 1 on a durable store
		k1 := publish(t, h, "k/1")          // supersedes k/1 of both
		other := publish(t, h, "other/x")

		s := open(t, srv.URL, "?snapshot=latest_per_key&topic=k", "")
		got := s.untilCaughtUp()
		var ids []string
		for _, ev := range got {
			ids = append(ids, ev.Name+" "+ev.ID)
		}
		want := []string{"commit " + id(h, both), "commit " + id(h, k1), "progress " + id(h, other)}
		if !store.Durable { // the status at seq 1 is the latest status
			want = append([]string{"status " + id(h, 1)}, want...)
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Fatalf("latest_per_key snapshot = %v, want %v", ids, want)
		}
		c := got[len(got)-3]
		if d := decode(t, c).GetCommit(); len(d.GetFacts()) != 1 || d.GetFacts()[0].GetTopic() != "k/2" || d.GetFactCount() != 2 {
			t.Errorf("commit %d should hold only the still-current k/2: %s", both, c.Data)
		}
	})
}

// TestResume resumes by the header and by the query, and checks that the
// header wins when both are given.
func TestResume(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		publish(t, h, "a/1")
		s := open(t, srv.URL, "", "")
		snap := s.untilCaughtUp()
		last := snap[len(snap)-1].ID
		if last != id(h, store.FirstCommit()) {
			t.Fatalf("last snapshot id %q", last)
		}
		s.cancel()

		var missed []uint64
		for i := 0; i < 3; i++ {
			missed = append(missed, publish(t, h, "a/"+strconv.Itoa(i)))
		}
		wantIDs := func(seqs []uint64) string {
			var ids []string
			for _, q := range seqs {
				ids = append(ids, id(h, q))
			}
			return strings.Join(ids, ",")
		}
		cases := []struct{ name, query, header string }{
			{"header", "", last},
			{"query", "?lastEventId=" + url.QueryEscape(last), ""},
			{"header wins over query", "?lastEventId=garbage", last},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := open(t, srv.URL, tc.query, tc.header)
				got := r.untilCaughtUp()
				var ids []string
				for _, ev := range got {
					if ev.Name != names.EventCommit {
						t.Errorf("unexpected %q event in a resume", ev.Name)
					}
					ids = append(ids, ev.ID)
				}
				if strings.Join(ids, ",") != wantIDs(missed) {
					t.Fatalf("resumed ids = %v, want %s (no gap, no duplicate)", ids, wantIDs(missed))
				}
			})
		}
	})
}

// TestUnresumableIDs: every unresumable id gives a named gap, then the
// snapshot, caught-up and live events, on a 200 response.
func TestUnresumableIDs(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Window = 8
		cases := []struct {
			name   string
			reason ringcastv1.Reason
			// setup returns the Last-Event-ID to send after the server is
			// prepared.
			setup func(t *testing.T, srv *ringtest.Server) string
		}{
			{"too old", ringcastv1.Reason_REASON_CURSOR_TOO_OLD, func(t *testing.T, srv *ringtest.Server) string {
				stale := id(srv.Hub(), publish(t, srv.Hub(), "a/1"))
				for i := 0; i < 20; i++ {
					publish(t, srv.Hub(), "a/1")
				}
				return stale
			}},
			{"other epoch", ringcastv1.Reason_REASON_EPOCH_MISMATCH, func(t *testing.T, srv *ringtest.Server) string {
				seq := publish(t, srv.Hub(), "a/1")
				if store.Durable { // a restart keeps the stream's epoch (TestResumeAfterRestart)
					return sse.FormatID(srv.Hub().Epoch()^1, seq, 0)
				}
				stale := id(srv.Hub(), seq)
				srv.Restart()
				publish(t, srv.Hub(), "a/1")
				return stale
			}},
			{"ahead", ringcastv1.Reason_REASON_CURSOR_AHEAD, func(t *testing.T, srv *ringtest.Server) string {
				seq := publish(t, srv.Hub(), "a/1")
				return id(srv.Hub(), seq+5)
			}},
			{"another log's commit", ringcastv1.Reason_REASON_COMMIT_MISMATCH, func(t *testing.T, srv *ringtest.Server) string {
				seq := publish(t, srv.Hub(), "a/1")
				publish(t, srv.Hub(), "a/1")
				ep, at, fp, err := sse.ParseLastEventID(fullID(t, srv, seq))
				if err != nil || at != seq || fp == 0 {
					t.Fatalf("id of %d: %d %08x %v", seq, at, fp, err)
				}
				return sse.FormatID(ep, seq, fp^1) // the seq of this epoch, another commit
			}},
			{"malformed", ringcastv1.Reason_REASON_MALFORMED_CURSOR, func(t *testing.T, srv *ringtest.Server) string {
				publish(t, srv.Hub(), "a/1")
				return "not-an-id"
			}},
			{"malformed upper-case epoch", ringcastv1.Reason_REASON_MALFORMED_CURSOR, func(t *testing.T, srv *ringtest.Server) string {
				publish(t, srv.Hub(), "a/1")
				return strings.ToUpper(id(srv.Hub(), 1))
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				srv := store.Start(t, cfg)
				lastID := tc.setup(t, srv)
				h := srv.Hub()
				_, head := h.Bounds()
				// The ring holds W = 8 (the stream, on a durable store).
				oldest := uint64(1)
				if head > 8 {
					oldest = head - 7
				}
				waitOldest(t, h, oldest)

				s := open(t, srv.URL, "", lastID)
				ge := s.expect(names.EventGap)
				m := decode(t, ge)
				g := m.GetGap()
				if tc.reason == ringcastv1.Reason_REASON_MALFORMED_CURSOR && g.GetRequestedSeq() != 0 {
					t.Errorf("gap for a malformed id = %v, want requested_seq 0", g)
				}
				if ge.ID != "" || g.GetReason() != tc.reason || m.GetInstanceEpoch() != h.Epoch() || g.GetOldestSeq() != oldest || g.GetHeadSeq() != head {
					t.Errorf("gap = %s; want reason %s, oldest %d, head %d of epoch %s", ge.Data, tc.reason, oldest, head, id(h, 0))
				}
				snap := s.untilCaughtUp()
				if len(snap) == 0 || snap[0].ID != id(h, oldest) || snap[len(snap)-1].ID != id(h, head) {
					t.Errorf("snapshot after gap: %d events from %q to %q, want %s..%s", len(snap), snap[0].ID, snap[len(snap)-1].ID, id(h, oldest), id(h, head))
				}
				seq := publish(t, h, "live/1")
				if ev := s.expect(names.EventCommit); ev.ID != id(h, seq) {
					t.Errorf("live id = %q, want %q", ev.ID, id(h, seq))
				}
			})
		}
	})
}

// fullID is the id, fingerprint included, that /events sends for seq.
func fullID(t *testing.T, srv *ringtest.Server, seq uint64) string {
	t.Helper()
	s := open(t, srv.URL, "", "")
	for _, ev := range s.untilCaughtUp() {
		if ev.ID == id(srv.Hub(), seq) {
			s.cancel()
			return ev.FullID
		}
	}
	t.Fatalf("no event of seq %d before caught-up", seq)
	return ""
}

// TestIDNamesItsCommit: an id carries the fingerprint of the commit at its
// seq (the same on a reconnect), and a Last-Event-ID with it resumes as one
// without it does; only one with another fingerprint is a gap
// (TestUnresumableIDs).
func TestIDNamesItsCommit(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		a, b := publish(t, h, "a/1"), publish(t, h, "a/1")
		full := fullID(t, srv, a)
		if full != fullID(t, srv, a) || full == id(h, a) {
			t.Fatalf("id of %d: %q, want one with a fingerprint, the same every time", a, full)
		}
		s := open(t, srv.URL, "", full)
		snap := s.untilCaughtUp()
		if got := snap[len(snap)-1]; got.Name != names.EventCommit || got.ID != id(h, b) {
			t.Fatalf("resume from %s: %v, want commit %d then caught-up", full, snap, b)
		}
	})
}

// TestProgressForFilteredStream: filtered-out commits advance the stream
// with progress events that carry ids, before caught-up and when idle.
func TestProgressForFilteredStream(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Heartbeat = 100 * time.Millisecond
		srv := store.Start(t, cfg)
		h := srv.Hub()
		publish(t, h, "wanted/1")
		publish(t, h, "other/1")

		s := open(t, srv.URL, "?topic=wanted", "")
		// The status (positioned on memory only), the commit, progress.
		snap := s.untilCaughtUp()
		head := store.FirstCommit() + 1
		n := 3
		if store.Durable {
			n = 2
		}
		if len(snap) != n || snap[n-1].Name != names.EventProgress || snap[n-1].ID != id(h, head) {
			t.Fatalf("snapshot = %+v; want status (on memory), commit, progress %s", snap, id(h, head))
		}
		if p := decode(t, snap[n-1]); p.GetSeq() != head || p.GetEventTime() == nil || p.GetProgress() == nil {
			t.Errorf("progress data = %s", snap[n-1].Data)
		}

		seq := publish(t, h, "other/2")
		ev := s.expect(names.EventProgress)
		if ev.ID != id(h, seq) {
			t.Fatalf("idle progress id = %q, want %q", ev.ID, id(h, seq))
		}
		// Resuming from a progress id is a plain resume.
		r := open(t, srv.URL, "?topic=wanted", ev.ID)
		if got := r.untilCaughtUp(); len(got) != 0 {
			t.Errorf("resume from the progress id replayed %+v", got)
		}
	})
}

// TestHeartbeatComment: an idle stream gets heartbeat comment lines.
func TestHeartbeatComment(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Heartbeat = 100 * time.Millisecond
		srv := store.Start(t, cfg)
		s := open(t, srv.URL, "", "")
		s.untilCaughtUp()
		// Memory holds the bind status at 1; an empty stream's range is
		// [1, 0].
		want := "heartbeat head=1 oldest=1"
		if store.Durable {
			want = "heartbeat head=0 oldest=1"
		}
		for {
			ev := ringtest.Wait(t, s.events, waitFor, "a heartbeat")
			if ev.end {
				t.Fatal("stream ended")
			}
			if strings.HasPrefix(ev.Comment, want) {
				if ev.Name != "" || ev.ID != "" {
					t.Errorf("heartbeat must be a bare comment: %+v", ev)
				}
				return
			}
		}
	})
}

// TestLappedReaderEnds: a reader that falls more than the window behind
// has its response ended (EventSource then reconnects with its last id).
func TestLappedReaderEnds(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		cfg := ringtest.Config()
		cfg.Window = 16
		cfg.WriteTimeout = time.Minute // this reader is slow, not gone
		srv := store.Start(t, cfg)
		h := srv.Hub()
		s := open(t, srv.URL, "", "")
		s.untilCaughtUp()

		resume := s.pause()
		// 100 commits of 4×60 KB (~24 MB): more than the socket buffers
		// hold. Few large commits keep a durable store's appends (one
		// round trip each) few.
		big, _ := structpb.NewStruct(map[string]any{"pad": strings.Repeat("x", 60<<10)})
		for i := 0; i < 100; i++ {
			var facts []*ringcastv1.Fact
			for range 4 {
				facts = append(facts, &ringcastv1.Fact{Topic: "bulk/1", Type: "test.big", Payload: &ringcastv1.Fact_Data{Data: big}})
			}
			if _, err := h.Publish(facts, ""); err != nil {
				t.Fatal(err)
			}
		}
		resume()
		comments := s.expectEnd()
		if len(comments) == 0 || !strings.Contains(comments[len(comments)-1], "subscriber_lagging") {
			t.Errorf("comments before the end = %q; want a resync subscriber_lagging note", comments)
		}
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		http.DefaultClient.CloseIdleConnections()
		if !strings.Contains(string(body), "\nringcast_lagging_cutoffs_total{face=\"sse\"} 1\n") {
			t.Error("the cut-off is not counted in ringcast_lagging_cutoffs_total{face=\"sse\"}")
		}
	})
}

// TestMalformedOrUnknownQueryIs400: a query the handler cannot read
// whole — malformed escapes, ";" separators, unknown or repeated
// parameters, a since_time that is not an RFC 3339 time or comes with a
// lastEventId, or names a time no google.protobuf.Timestamp holds (before
// year 1) — is answered 400 naming the problem, never a stream of
// every topic.
func TestMalformedOrUnknownQueryIs400(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		for q, want := range map[string]string{
			"?topic=zzz;snapshot=bad":                                          "malformed query",
			"?topic=%zz":                                                       "malformed query",
			"?topics=gauges":                                                   `unknown query parameter "topics"`,
			"?topic=a&snapshot=retained&snapshot=bad":                          "snapshot given 2 times",
			"?lastEventId=a&lastEventId=b":                                     "lastEventId given 2 times",
			"?since_time=yesterday":                                            "since_time must be an RFC 3339 time",
			"?since_time=2026-12-01":                                           "since_time must be an RFC 3339 time",
			"?since_time=0000-01-01T00:00:00Z":                                 "bad query: since_time is not a valid timestamp",
			"?since_time=0001-01-01T00:00:00%2B01:00":                          "bad query: since_time is not a valid timestamp",
			"?since_time=2026-12-01T09:00:00Z&since_time=2026-12-01":           "since_time given 2 times",
			"?since_time=2026-12-01T09:00:00Z&lastEventId=" + id(srv.Hub(), 1): "since_time and lastEventId",
		} {
			resp, err := http.Get(srv.URL + "/events" + q)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
				t.Errorf("%s: %d %q, want 400 with %q", q, resp.StatusCode, body, want)
			}
		}
	})
}

func TestBadQuery(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		for _, q := range []string{"?snapshot=everything", "?topic=Bad%20Topic", "?topic="} {
			resp, err := http.Get(srv.URL + "/events" + q)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", q, resp.StatusCode)
			}
		}
		resp, err := http.Post(srv.URL+"/events", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: status %d, want 405", resp.StatusCode)
		}
		http.DefaultClient.CloseIdleConnections()
	})
}

// TestDataIsConnectJSON: every event's data is the stream message a Connect
// JSON client receives for the same subscribe, spelled the same (lowerCamel
// names; the epoch as a decimal string whose 16-digit hex form is an id's
// prefix), less seq and instanceEpoch in an event with an id, which
// carries them: the data with the id's position is the message.
func TestDataIsConnectJSON(t *testing.T) {
	forEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		h := srv.Hub()
		publish(t, h, "a/1", "b/1")
		publish(t, h, "b/2")
		publish(t, h, "a/2")
		publish(t, h, "b/3") // a progress ends the snapshot

		s := open(t, srv.URL, "?topic=a", "")
		var got []event
		for len(got) == 0 || got[len(got)-1].Name != names.EventCaughtUp {
			ev := s.next()
			if ev.end {
				t.Fatalf("stream ended (%v) before caught-up", ev.err)
			}
			if ev.Name != "" {
				got = append(got, ev)
			}
		}

		c := ringcastv1connect.NewEventServiceClient(srv.HTTPClient(ringcast.ProtocolConnect), srv.URL, connect.WithProtoJSON())
		stream, err := c.SubscribeEvents(context.Background(), connect.NewRequest(&ringcastv1.SubscribeEventsRequest{Topics: []string{"a"}, EndAtHead: true}))
		if err != nil {
			t.Fatal(err)
		}
		var want []*ringcastv1.SubscribeEventsResponse
		for stream.Receive() {
			want = append(want, stream.Msg())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		stream.Close()

		if len(got) != len(want) {
			t.Fatalf("SSE sent %d events, Connect JSON %d messages", len(got), len(want))
		}
		kinds := map[string]int{}
		for i, ev := range got {
			if strings.Contains(ev.Data, "_") && !strings.Contains(ev.Data, "SERVER_STATE_") && !strings.Contains(ev.Data, "REASON_") {
				t.Errorf("event %d data has a snake_case name: %s", i, ev.Data)
			}
			if ev.ID == "" && !strings.Contains(ev.Data, `"instanceEpoch":"`+strconv.FormatUint(h.Epoch(), 10)+`"`) {
				t.Errorf("event %d without an id: data lacks the decimal instanceEpoch: %s", i, ev.Data)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal([]byte(ev.Data), &top); err != nil {
				t.Fatalf("event %d data %s: %v", i, ev.Data, err)
			}
			if _, seq := top["seq"]; ev.ID != "" && (seq || top["instanceEpoch"] != nil) {
				t.Errorf("event %d with id %q repeats the position in its data: %s", i, ev.ID, ev.Data)
			}
			kinds[ev.Name]++
			m := decode(t, ev) // with the id's seq and epoch
			if wantID := id(h, want[i].GetSeq()); want[i].GetSeq() > 0 && ev.ID != wantID || want[i].GetSeq() == 0 && ev.ID != "" {
				t.Errorf("event %d id %q; want %q for seq %d, none for 0", i, ev.ID, wantID, want[i].GetSeq())
			}
			if m.GetCaughtUp() != nil { // stamped with its send time
				m.EventTime, want[i].EventTime = nil, nil
			}
			// A durable store's replica status is made for each stream:
			// its time and the ring's bytes (cached encodings included)
			// are those of the moment.
			if store.Durable && m.GetServerStatus() != nil && m.GetSeq() == 0 && want[i].GetServerStatus() != nil {
				m.EventTime, want[i].EventTime = nil, nil
				m.GetServerStatus().RingBytes, want[i].GetServerStatus().RingBytes = 0, 0
			}
			if !proto.Equal(m, want[i]) {
				t.Errorf("event %d: SSE %v, Connect JSON %v", i, m, want[i])
			}
		}
		if kinds[names.EventCommit] != 2 || kinds[names.EventProgress] != 1 || kinds[names.EventCaughtUp] != 1 {
			t.Errorf("events by name %v; want 2 commits, a progress and caught-up", kinds)
		}
	})
}
