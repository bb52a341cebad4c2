package hub

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
)

// Event is one positioned entry of the ring: a commit or a server status.
//
// An Event is immutable once published and shared by every subscriber:
// nothing may modify it, its response or the facts it holds. Only its cache
// of encodings of that response fills in, once per Slot (Cache).
type Event struct {
	Seq  uint64
	Time time.Time
	// resp is the complete response an unfiltered subscriber sends for this
	// event (seq, epoch, time and payload), built once at publish.
	resp *ringcastv1.SubscribeEventsResponse
	// encoded caches resp in each claimed Slot's encoding, filled on
	// first use (Cache): one place per slot claimed when the event was
	// made (newSlots); nil for a hole the ring fills.
	encoded []atomic.Pointer[[]byte]
	// size is resp's protobuf size, what its encodings are sized from.
	size int64
	// cost is what the event holds on the heap (its response and facts,
	// see factCost): what it costs the ring's byte budget before any
	// encoding is cached.
	cost int64
	// budget is the ring's byte count, set when the ring takes the event;
	// cached encodings are added to it while the event is in the ring,
	// and cap is the ring's bound.
	budget *atomic.Int64
	cap    int64
	// cached is the bytes of the encodings cached on the event, or
	// evictedMark once the ring has dropped it.
	cached atomic.Int64
}

// evictedMark in Event.cached: the event has left the ring.
const evictedMark = math.MinInt64

// Slot is one place in every event's cache of encodings of its shared
// response. A face claims one per wire encoding it sends events in
// (NewSlot, at init) and fills it on first use (Event.Cache); the hub
// never encodes and never calls the face: it only keeps what the face
// gives it and accounts for it.
//
// Events have as many places as the faces built into the server claimed:
// the count is not fixed, so a new face (or a new encoding of one) only
// claims its slots. The Connect handler claims two and SSE one; a commit
// event holds that many in its own block (inlineSlots) and allocates
// more, apart, only when more were claimed.
type Slot uint32

// inlineSlots is how many encoding places a commit event's block holds in
// place: the slots of the faces ringcast has. More claimed slots cost a
// second allocation per event, not a limit.
const inlineSlots = 3

// claimedSlots counts the slots NewSlot has claimed.
var claimedSlots atomic.Uint32

// NewSlot claims a slot of the events' encoding cache. Call it once per
// encoding, at package init, so that every event has a place for it: an
// event made before a slot was claimed caches nothing in it (Cached
// answers nil, Cache keeps nothing), which costs encodes, never a send.
func NewSlot() Slot {
	return Slot(claimedSlots.Add(1) - 1)
}

// newSlots returns an event's encoding places: one per claimed slot, in
// inline when they fit there.
func newSlots(inline *[inlineSlots]atomic.Pointer[[]byte]) []atomic.Pointer[[]byte] {
	n := int(claimedSlots.Load())
	if inline != nil && n <= inlineSlots {
		return inline[:n:n]
	}
	return make([]atomic.Pointer[[]byte], n)
}

// Cached returns the encoding cached in slot s, or nil when there is none
// yet: the caller then encodes the response (Response, sized from
// ProtoSize) and hands the bytes to Cache. The returned bytes are shared
// and must not be modified.
func (e *Event) Cached(s Slot) []byte {
	if int(s) < len(e.encoded) {
		if b := e.encoded[s].Load(); b != nil {
			return *b
		}
	}
	return nil
}

// Cache keeps b, the encoding of the event's shared response that slot s
// holds, and returns the bytes to send: b, or the encoding another send
// cached first. Every subscriber sending the event unchanged then shares
// one encoding per slot instead of encoding it per send; the event is
// immutable, so the bytes never go stale. From the call on, b is shared
// and must not be modified.
//
// Cached encodings count against the ring's byte budget: an encoding is
// cached only while the event is in the ring and the ring's bytes, with
// it, stay within the bound; otherwise b is returned without being kept
// (the caller still sends it, it is just encoded again on the next send).
// When the ring drops the event, its encodings leave the budget with it.
// The budget counts an encoding's length, so one kept with much more room
// than it uses is copied to its length first (see clip).
func (e *Event) Cache(s Slot, b []byte) []byte {
	if int(s) >= len(e.encoded) || !e.reserve(int64(len(b))) {
		return b
	}
	b = clip(b)
	slot := &e.encoded[s]
	if !slot.CompareAndSwap(nil, &b) {
		e.release(int64(len(b)))
		// Another send cached it first; the ring may have dropped the
		// event (and cleared the slot) since, so keep ours then.
		if p := slot.Load(); p != nil {
			b = *p
		}
	}
	return b
}

// ProtoSize is the shared response's protobuf size, to size an encoding's
// buffer from: an encoding that outgrows its first buffer is copied.
func (e *Event) ProtoSize() int { return int(e.size) }

// clip returns b, or a copy of it without spare capacity when b's buffer
// holds more than a quarter (and 64 bytes) more than b: a buffer sized from
// a guess can be several times what the encoding took (JSON writes a small
// number in a byte or two that protobuf stores in nine), and memory the
// budget does not count must stay a small part of what it does.
func clip(b []byte) []byte {
	if cap(b)-len(b) <= len(b)/4+64 {
		return b
	}
	return append(make([]byte, 0, len(b)), b...)
}

// reserve counts n more cached bytes against the ring's budget, or reports
// false when the event is not in a ring or the budget has no room.
func (e *Event) reserve(n int64) bool {
	if e.budget == nil || e.budget.Load()+n > e.cap {
		return false
	}
	for {
		c := e.cached.Load()
		if c == evictedMark {
			return false
		}
		if e.cached.CompareAndSwap(c, c+n) {
			e.budget.Add(n)
			return true
		}
	}
}

// release returns n cached bytes reserved by a lost race.
func (e *Event) release(n int64) {
	for {
		c := e.cached.Load()
		if c == evictedMark {
			return // evict took them off already
		}
		if e.cached.CompareAndSwap(c, c-n) {
			e.budget.Add(-n)
			return
		}
	}
}

// evict is called by the ring as it drops the event: the event's bytes,
// cached encodings included, leave the budget, and no encoding is cached
// on it from now on (a stream still sending it encodes it per send).
func (e *Event) evict() {
	c := e.cached.Swap(evictedMark)
	e.budget.Add(-(e.cost + c))
	for i := range e.encoded {
		e.encoded[i].Store(nil)
	}
}

// Cost is what the event costs the ring's byte budget, without cached
// encodings: what its response and facts hold on the heap.
func (e *Event) Cost() int64 { return e.cost }

// Response is the shared, read-only response for this event.
func (e *Event) Response() *ringcastv1.SubscribeEventsResponse { return e.resp }

// Fingerprint is the fingerprint of the event (package fingerprint): the
// commit's, or on the memory store a status's; never 0.
func (e *Event) Fingerprint() uint32 { return e.resp.GetFingerprint() }

// Commit is the event's commit, or nil for a status event.
func (e *Event) Commit() *ringcastv1.Commit { return e.resp.GetCommit() }

// commitEvent is a commit event and the messages of its shared response,
// allocated together: one allocation per published commit instead of five,
// and one object for the collector to trace per ring entry. Nothing holds
// the inner messages longer than the event (they share its lifetime: a
// filtered response built from them keeps the whole block, a few hundred
// bytes, alive with it).
type commitEvent struct {
	ev     Event
	slots  [inlineSlots]atomic.Pointer[[]byte]
	resp   ringcastv1.SubscribeEventsResponse
	oneof  ringcastv1.SubscribeEventsResponse_Commit
	commit ringcastv1.Commit
	time   timestamppb.Timestamp
}

// newCommitEvent is a commit's event. Its cost is the heap its block and
// facts hold (factCost). Its size is its response's protobuf size, in two
// parts: the response without its facts, sized by protobuf
// before they are added, and each fact, sized by factSize. The commit's
// length is written before it, so the varint of that length is counted
// again with the facts in it. (The sizes protobuf caches in the response
// and its commit stay those without the facts. They are read here, for the
// commit's, before the facts are added, and nowhere else: a marshal sizes
// a message afresh unless told to UseCachedSize.)
//
// Its fingerprint is the memory store's (fingerprint.Position);
// NewStoredCommitEvent gives a durable store's.
func newCommitEvent(epoch, seq uint64, at time.Time, facts []*ringcastv1.Fact, traceparent string) *Event {
	return newCommitEventFP(epoch, seq, at, facts, traceparent, fingerprint.Position(seq, at))
}

func newCommitEventFP(epoch, seq uint64, at time.Time, facts []*ringcastv1.Fact, traceparent string, fp uint32) *Event {
	b := &commitEvent{}
	b.commit.FactCount, b.commit.Traceparent = uint32(len(facts)), traceparent
	b.oneof.Commit = &b.commit
	b.time.Seconds, b.time.Nanos = at.Unix(), int32(at.Nanosecond())
	b.resp.Seq, b.resp.InstanceEpoch, b.resp.EventTime, b.resp.Event = seq, epoch, &b.time, &b.oneof
	b.resp.Fingerprint = fp
	b.ev.Seq, b.ev.Time, b.ev.resp = seq, at, &b.resp
	b.ev.encoded = newSlots(&b.slots)

	bare := proto.Size(&b.resp)
	commit := proto.MarshalOptions{UseCachedSize: true}.Size(&b.commit)
	withFacts := commit
	cost := allocSize(commitEventObj) + allocSize(len(traceparent)) + allocSize(8*cap(facts)) + slotsApart(len(b.ev.encoded))
	for _, f := range facts {
		withFacts += 1 + protowire.SizeBytes(factSize(f)) // Commit.facts is field 1
		cost += factCost(f)
	}
	b.commit.Facts = facts
	b.ev.size = int64(bare - protowire.SizeBytes(commit) + protowire.SizeBytes(withFacts))
	b.ev.cost = int64(cost)
	return &b.ev
}

func newStatusEvent(epoch, seq uint64, at time.Time, status *ringcastv1.ServerStatus) *Event {
	e := &Event{Seq: seq, Time: at, resp: &ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: epoch,
		EventTime:     timestamppb.New(at),
		Fingerprint:   fingerprint.Position(seq, at),
		Event:         &ringcastv1.SubscribeEventsResponse_ServerStatus{ServerStatus: status},
	}}
	e.encoded = newSlots(nil)
	e.size = int64(proto.Size(e.resp))
	// A status is a few small messages: a few times its protobuf size.
	e.cost = 4*e.size + int64(allocSize(int(unsafe.Sizeof(Event{})))) + int64(allocSize(slotObj*len(e.encoded)))
	return e
}

// slotObj is the size of one encoding place.
const slotObj = int(unsafe.Sizeof(atomic.Pointer[[]byte]{}))

// slotsApart is what a commit event's n encoding places cost beyond its
// block: nothing while they fit inline.
func slotsApart(n int) int {
	if n <= inlineSlots {
		return 0
	}
	return allocSize(slotObj * n)
}

// commitEventObj is the size of a commit event's block.
const commitEventObj = int(unsafe.Sizeof(commitEvent{}))

// commitResponse builds a per-stream response for a commit carrying only
// some of its facts (a filter, a partial resume, a latest-per-key
// snapshot), with the commit's fingerprint fp.
func commitResponse(epoch, seq uint64, at *timestamppb.Timestamp, fp uint32, facts []*ringcastv1.Fact, factCount uint32, traceparent string) *ringcastv1.SubscribeEventsResponse {
	return &ringcastv1.SubscribeEventsResponse{
		Seq:           seq,
		InstanceEpoch: epoch,
		EventTime:     at,
		Fingerprint:   fp,
		Event: &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{
			Facts:       facts,
			FactCount:   factCount,
			Traceparent: traceparent,
		}},
	}
}
