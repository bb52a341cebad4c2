package hub

import (
	"slices"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/topic"
)

// maxEvictedTopics bounds the evicted-topics index; past it the entries
// with the lowest seqs are forgotten (conservatively, see missed).
const maxEvictedTopics = 1 << 16

// statusTopic stands for ServerStatus events in the index: they pass every
// filter. Topics are never empty, so it cannot collide with one.
const statusTopic = ""

// evictedTopics remembers, for every filter entry that matches a topic
// (topic.Entries: "a", "a/b", "a/b/c" for topic "a/b/c"), the highest seq among the events that have left the ring
// and touched it. A filtered stream that finds its next event gone asks
// whether any event it would have sent was among the evicted ones (missed):
// only then is it lagging. One whose filter skipped everything that left the
// ring continues from the oldest retained event, however late it was
// scheduled (docs/protocol.md, "Heartbeats, lagging, stuck readers").
//
// It is guarded by Hub.mu, like the ring that feeds it.
type evictedTopics struct {
	last map[string]uint64
	// forgotten is the highest seq of an entry dropped to bound last: a
	// topic not in last may have been evicted at any seq up to it.
	forgotten uint64
	// lastAt, lastSeq and lastFP are the commit time, seq and
	// fingerprint of the newest evicted event (what a Progress covering it
	// says, and what a cursor at it is checked against).
	lastAt  time.Time
	lastSeq uint64
	lastFP  uint32
}

// note records that ev left the ring.
func (x *evictedTopics) note(ev *Event) {
	if x.last == nil {
		x.last = make(map[string]uint64)
	}
	x.lastAt, x.lastSeq, x.lastFP = ev.Time, ev.Seq, ev.Fingerprint()
	if ev.resp.GetServerStatus() != nil {
		x.last[statusTopic] = ev.Seq
		return
	}
	c := ev.Commit()
	if c == nil {
		return // a hole (a seq a Log skipped): nothing to deliver
	}
	prev := "\x00" // not a topic
	for _, f := range c.GetFacts() {
		if f.Topic == prev {
			continue // the common case: a commit of facts on one topic
		}
		prev = f.Topic
		for e := range topic.Entries(f.Topic) {
			x.last[e] = ev.Seq
		}
	}
	if len(x.last) > maxEvictedTopics {
		x.prune()
	}
}

// prune forgets the older half of the entries.
func (x *evictedTopics) prune() {
	seqs := make([]uint64, 0, len(x.last))
	for _, s := range x.last {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	cut := seqs[len(seqs)/2]
	for t, s := range x.last {
		if s <= cut {
			delete(x.last, t)
		}
	}
	x.forgotten = max(x.forgotten, cut)
}

// missed reports whether an event with seq >= from that a stream with
// filter topics would have sent has left the ring. Every entry of topics
// is a topic or a prefix of topics at a "/" boundary (topic.Match), which is
// exactly what the index is keyed by.
func (x *evictedTopics) missed(topics []string, from uint64) bool {
	if x.seq(statusTopic) >= from {
		return true
	}
	for _, t := range topics {
		if x.seq(t) >= from {
			return true
		}
	}
	return false
}

func (x *evictedTopics) seq(entry string) uint64 {
	if s, ok := x.last[entry]; ok {
		return s
	}
	return x.forgotten
}
