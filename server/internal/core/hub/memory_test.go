package hub_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// encodingSink takes shared events whole and has them encoded (and cached)
// in every encoding, as the Connect and SSE faces do on a replay.
type encodingSink struct{}

func (encodingSink) Send(*ringcastv1.SubscribeEventsResponse) error { return nil }

func (encodingSink) SendEvent(ev *hub.Event) error {
	for i, slot := range hub.TestSlots {
		if ev.Cached(slot) != nil {
			continue
		}
		m := proto.Marshal
		if i > 0 {
			m = protojson.Marshal
		}
		b, err := m(ev.Response())
		if err != nil {
			return err
		}
		ev.Cache(slot, b)
	}
	return nil
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHeapStaysWithinTheByteBudgets: commits of 16 facts, each under a
// key of its own, published far past the byte budgets (a count window that
// would hold all of them), with two full replays that cache every encoding
// of every event held. The heap the hub holds afterwards stays within 1.5×
// the sum of --max-ring-bytes and --max-state-bytes, for facts of long
// strings (about their encoded size in memory) and for structured data of
// many small numbers (several times its encoded size: the budgets count
// what facts hold on the heap, not their protobuf size). Without the byte
// budgets it would hold all ~100 MB published, several times over.
func TestHeapStaysWithinTheByteBudgets(t *testing.T) {
	const ringBytes, stateBytes = 8 << 20, 4 << 20
	pad := strings.Repeat("x", 16<<10)
	for _, shape := range []struct {
		name    string
		commits int
		data    func(c, i int) map[string]any
	}{
		{"long strings", 400, func(c, i int) map[string]any { return map[string]any{"pad": pad + fmt.Sprint(c, i)} }},
		{"small numbers", 200, func(c, i int) map[string]any {
			m := make(map[string]any, 200)
			for j := range 200 {
				m[fmt.Sprint("f", j)] = float64(c + i + j)
			}
			return m
		}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			base := heapInUse()
			h, err := hub.New(hub.Config{Window: 1 << 12, MaxRingBytes: ringBytes, StateKeys: 1 << 20, MaxStateBytes: stateBytes, Lease: -1, Heartbeat: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			for c := range shape.commits {
				facts := make([]*ringcastv1.Fact, 16)
				for i := range facts {
					d, _ := structpb.NewStruct(shape.data(c, i))
					facts[i] = &ringcastv1.Fact{Topic: "big", Type: "t", Key: fmt.Sprintf("k-%d-%d", c, i), Payload: &ringcastv1.Fact_Data{Data: d}}
				}
				if _, err := h.Publish(facts, ""); err != nil {
					t.Fatal(err)
				}
				if c == shape.commits/2-1 || c == shape.commits-1 {
					// A full replay of what the ring holds, caching every encoding.
					if err := h.Subscribe(context.Background(), hub.Request{EndAtHead: true, Snapshot: ringcastv1.Snapshot_SNAPSHOT_RETAINED}, encodingSink{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			now := heapInUse() // once: a second reading may be higher than the first
			used := now - min(base, now)
			if got := h.RingBytes(); got > ringBytes {
				t.Fatalf("ring holds %d bytes, over its bound %d", got, ringBytes)
			}
			if got := h.StateBytes(); got > stateBytes {
				t.Fatalf("key table holds %d bytes, over its bound %d", got, stateBytes)
			}
			limit := uint64(1.5 * (ringBytes + stateBytes))
			t.Logf("%s: heap held %.1f MiB = %.2f× (ring %.1f MiB, table %.1f MiB; limit %d MiB)", shape.name, float64(used)/(1<<20),
				float64(used)/(ringBytes+stateBytes), float64(h.RingBytes())/(1<<20), float64(h.StateBytes())/(1<<20), limit>>20)
			if used > limit {
				t.Fatalf("heap held %d bytes after publishing far past the budgets, over 1.5× the budgets (%d)", used, limit)
			}
			runtime.KeepAlive(h)
		})
	}
}

// pausingSink encodes every response as the JSON faces do and, after its
// first `after` responses, reports on reached and waits for release: a
// subscriber that stopped reading in the middle of its snapshot.
type pausingSink struct {
	after   int
	n       int
	reached chan<- struct{}
	release <-chan struct{}
}

func (s *pausingSink) Send(r *ringcastv1.SubscribeEventsResponse) error {
	if _, err := protojson.Marshal(r); err != nil {
		return err
	}
	if s.n++; s.n == s.after {
		s.reached <- struct{}{}
		<-s.release
	}
	return nil
}

// TestConcurrentLatestPerKeySnapshotsShareTheTable: eight LATEST_PER_KEY
// snapshots of a table holding about --max-state-bytes, all paused half-way
// (their clients stopped reading), add less than one table's worth of heap
// between them. A snapshot streams from the table's shared facts, one
// commit at a time; it never holds an encoded or copied snapshot per stream
// (which would cost eight tables here).
func TestConcurrentLatestPerKeySnapshotsShareTheTable(t *testing.T) {
	const stateBytes, streams = 8 << 20, 8
	h, err := hub.New(hub.Config{Window: 64, StateKeys: 1 << 20, MaxStateBytes: stateBytes, Lease: -1, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	pad := strings.Repeat("x", 15<<10)
	keys := 0
	for c := 0; h.StateBytes() < stateBytes*9/10; c++ {
		facts := make([]*ringcastv1.Fact, 8)
		for i := range facts {
			d, _ := structpb.NewStruct(map[string]any{"pad": pad})
			facts[i] = &ringcastv1.Fact{Topic: "gauges", Type: "t", Key: fmt.Sprintf("k-%d-%d", c, i), Payload: &ringcastv1.Fact_Data{Data: d}}
		}
		if _, err := h.Publish(facts, ""); err != nil {
			t.Fatal(err)
		}
		keys += len(facts)
	}
	base := heapInUse()

	reached, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, streams)
	for range streams {
		sink := &pausingSink{after: keys / 8 / 2, reached: reached, release: release}
		go func() {
			done <- h.Subscribe(context.Background(), hub.Request{EndAtHead: true, Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY}, sink)
		}()
	}
	for range streams {
		<-reached
	}
	now := heapInUse() // once: a second reading may be higher than the first
	used := now - min(base, now)
	close(release)
	for range streams {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d keys, table %d MiB; %d snapshots paused half-way hold %d KiB", keys, h.StateBytes()>>20, streams, used>>10)
	if used > stateBytes {
		t.Fatalf("%d paused snapshots hold %d bytes, more than one table (%d)", streams, used, stateBytes)
	}
}

// batchSink records the largest batch of shared events it is given between
// two flushes, in the events' cost (Event.Size) and in count.
type batchSink struct {
	bytes, most int64
	n, events   int
	largest     int64 // the largest single event
}

func (s *batchSink) Send(*ringcastv1.SubscribeEventsResponse) error { return nil }

func (s *batchSink) SendEvent(ev *hub.Event) error {
	s.bytes += ev.Cost()
	s.n++
	s.events++
	s.largest = max(s.largest, ev.Cost())
	return nil
}

func (s *batchSink) Flush() error {
	if s.n > 1 {
		s.most = max(s.most, s.bytes)
	}
	s.bytes, s.n = 0, 0
	return nil
}

// TestReplayBatchesStopAtTheirBytes: a stream replaying the ring takes its
// events in batches of at most hub.MaxBatchBytes (what they hold on the
// heap), whatever their count; an event larger than that is a batch of
// its own. A batch used to be bounded by count only: 128 events of any
// size in one buffer before its one write.
func TestReplayBatchesStopAtTheirBytes(t *testing.T) {
	h, err := hub.New(hub.Config{Window: 4096, MaxRingBytes: 256 << 20, Lease: -1, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for i := range 600 {
		facts := []*ringcastv1.Fact{{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_BinaryData{BinaryData: make([]byte, 10<<10)}}}
		if i%100 == 50 { // a commit over the bound: passes alone
			facts = nil
			for range hub.MaxBatchBytes/(60<<10) + 1 {
				facts = append(facts, &ringcastv1.Fact{Topic: "a/b", Type: "t", Payload: &ringcastv1.Fact_BinaryData{BinaryData: make([]byte, 60<<10)}})
			}
		}
		if _, err := h.Publish(facts, ""); err != nil {
			t.Fatal(err)
		}
	}
	sink := &batchSink{}
	if err := h.Subscribe(context.Background(), hub.Request{EndAtHead: true, Snapshot: ringcastv1.Snapshot_SNAPSHOT_RETAINED}, sink); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events replayed; the largest batch of several held %d KiB (bound %d KiB), the largest event %d KiB", sink.events, sink.most>>10, hub.MaxBatchBytes>>10, sink.largest>>10)
	if sink.events < 600 || !hub.MaxBatchBytes.Over(sink.largest) {
		t.Fatalf("replayed %d events, the largest %d bytes", sink.events, sink.largest)
	}
	if hub.MaxBatchBytes.Over(sink.most) {
		t.Fatalf("a batch of several events held %d bytes, over hub.MaxBatchBytes (%d)", sink.most, hub.MaxBatchBytes)
	}
}
