package natslog

import (
	"context"
	"testing"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// TestBlocksKeepMaxBlocksAfterARejectedRead: a block read while incomplete
// is not kept and leaves no trace in the eviction order, so once complete
// it is kept like any other, and maxBlocks complete blocks are all served
// again without another read.
func TestBlocksKeepMaxBlocksAfterARejectedRead(t *testing.T) {
	var c blocks
	fills := 0
	whole := func(_ context.Context, from uint64) []*hub.Event {
		fills++
		evs := make([]*hub.Event, blockSize)
		for i := range evs {
			evs[i] = &hub.Event{Seq: from + uint64(i)}
		}
		return evs
	}
	partial := func(ctx context.Context, from uint64) []*hub.Event {
		return whole(ctx, from)[:10]
	}
	ctx := context.Background()
	evs, ok := c.get(ctx, 0, partial)
	if ok || len(evs) != 10 || evs[0].Seq != 1 {
		t.Fatalf("an incomplete block: ok %v, %d events; want not ok with the 10 read", ok, len(evs))
	}
	for idx := range uint64(maxBlocks) {
		if _, ok := c.get(ctx, idx, whole); !ok {
			t.Fatalf("block %d not ok", idx)
		}
	}
	fills = 0
	for idx := range uint64(maxBlocks) {
		c.get(ctx, idx, whole)
	}
	if fills != 0 || len(c.order) != maxBlocks || len(c.byIdx) != maxBlocks {
		t.Fatalf("%d blocks read again, order %d, kept %d; want 0 and %d kept", fills, len(c.order), len(c.byIdx), maxBlocks)
	}
	// One more: the oldest goes.
	c.get(ctx, maxBlocks, whole)
	if _, kept := c.byIdx[0]; kept || len(c.byIdx) != maxBlocks || len(c.order) != maxBlocks {
		t.Fatalf("after one more block: block 0 kept %v, %d kept, order %d", kept, len(c.byIdx), len(c.order))
	}
}
