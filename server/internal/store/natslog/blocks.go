package natslog

import (
	"context"
	"slices"
	"sync"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// blockSize is how many commits one cached block of the stream holds.
const blockSize = 1024

// maxBlocks bounds the cached blocks (about 64 Ki commits).
const maxBlocks = 64

// blocks caches aligned, complete runs of commits read from the stream —
// seqs [i*blockSize+1, (i+1)*blockSize] — so that many cursors catching up
// through the same part of the stream at once (a reconnect storm after an
// outage) read it from JetStream once and share its events, which are
// immutable. Blocks are only kept once complete and contiguous; the oldest
// kept block is dropped first. order holds exactly the indexes of byIdx,
// oldest first.
type blocks struct {
	mu    sync.Mutex
	byIdx map[uint64]*block
	order []uint64
}

type block struct {
	ready chan struct{} // closed when evs and ok are set
	evs   []*hub.Event
	ok    bool // complete and contiguous: may be served and kept
}

// get returns the commits of block idx, reading them with fill on first use.
// ok is false when the block could not be read whole: evs are then what
// fill read (what the stream holds from the block's start, in seq order,
// or nothing), not kept, and the caller may serve from them or read again.
// Callers waiting for the same fill share its result either way.
func (c *blocks) get(ctx context.Context, idx uint64, fill func(ctx context.Context, from uint64) []*hub.Event) ([]*hub.Event, bool) {
	c.mu.Lock()
	if c.byIdx == nil {
		c.byIdx = make(map[uint64]*block)
	}
	b, found := c.byIdx[idx]
	if !found {
		b = &block{ready: make(chan struct{})}
		c.byIdx[idx] = b
		c.order = append(c.order, idx)
		if len(c.order) > maxBlocks {
			delete(c.byIdx, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	if !found {
		from := idx*blockSize + 1
		evs := fill(ctx, from)
		b.evs = evs
		b.ok = len(evs) == blockSize && evs[0].Seq == from && evs[blockSize-1].Seq == from+blockSize-1
		close(b.ready)
		if !b.ok {
			c.mu.Lock()
			if c.byIdx[idx] == b {
				delete(c.byIdx, idx)
				c.order = slices.DeleteFunc(c.order, func(i uint64) bool { return i == idx })
			}
			c.mu.Unlock()
		}
	}
	select {
	case <-b.ready:
	case <-ctx.Done():
		return nil, false
	}
	return b.evs, b.ok
}
