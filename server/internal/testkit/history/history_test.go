package history_test

import (
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/history"
)

const e1, e2 = 0x1111, 0x2222

// published: epoch 1 has commits 2 (2 facts), 3 (1 fact), 4 (3 facts);
// epoch 2 has commit 2 (1 fact).
func published() *history.History {
	h := history.New()
	h.Published(e1, 3, 1) // receipts may arrive out of order
	h.Published(e1, 2, 2)
	h.Published(e1, 4, 3)
	h.Published(e2, 2, 1)
	return h
}

func facts(c *history.Consumer, epoch uint64, pos ...[2]uint64) {
	for _, p := range pos {
		c.Fact(epoch, p[0], uint32(p[1]))
	}
}

func TestAcceptsContractHistories(t *testing.T) {
	h := published()
	all := h.Consumer("all")
	facts(all, e1, [2]uint64{2, 0}, [2]uint64{2, 1}, [2]uint64{3, 0}, [2]uint64{4, 0})
	all.Restarted() // stopped mid-commit, resumed from its cursor
	facts(all, e1, [2]uint64{4, 1}, [2]uint64{4, 2})
	all.Resynced(e2, "REASON_EPOCH_MISMATCH", 4, 1, 2)
	facts(all, e2, [2]uint64{2, 0})

	// Resynced into a server that restarted again before its snapshot
	// gave anything: the snapshot is the next epoch's, from its start.
	twice := h.Consumer("restarted-twice")
	facts(twice, e1, [2]uint64{2, 0})
	twice.Resynced(0x3333, "REASON_EPOCH_MISMATCH", 2, 1, 9)
	facts(twice, e2, [2]uint64{2, 0})
	sum, err := h.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Facts != 9 || sum.Resyncs != 2 || sum.Restarts != 1 || sum.Commits != 4 {
		t.Fatalf("summary %v", sum)
	}

	h = published()
	all2 := h.Consumer("lagging")
	facts(all2, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
	all2.Resynced(e1, "REASON_SUBSCRIBER_LAGGING", 2, 4, 4)
	facts(all2, e1, [2]uint64{4, 0}, [2]uint64{4, 1}, [2]uint64{4, 2})
	sum, err = h.Check(true)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Facts != 5 || sum.Resyncs != 1 || sum.Consumers != 1 {
		t.Fatalf("summary %v", sum)
	}
}

func TestNamesEachViolation(t *testing.T) {
	for _, c := range []struct {
		name   string
		record func(c *history.Consumer)
		want   string
	}{
		{"missing", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{3, 0})
		}, "facts missing: expected 2/1, given 3/0"},
		{"repeated across a restart", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
			c.Restarted()
			facts(c, e1, [2]uint64{2, 1})
		}, "fact 2/1 repeated or out of order: expected 3/0"},
		{"fresh start not at the beginning", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{3, 0})
		}, "facts missing: expected 2/0"},
		{"new epoch without a resync", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0})
			facts(c, e2, [2]uint64{2, 0})
		}, "without a resync"},
		{"epoch mismatch within an epoch", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
			c.Resynced(e1, "REASON_EPOCH_MISMATCH", 2, 2, 4)
		}, "EPOCH_MISMATCH without a new epoch"},
		{"lagging while still retained", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
			c.Resynced(e1, "REASON_SUBSCRIBER_LAGGING", 2, 3, 4)
		}, "still retained"},
		{"requested past what was given", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
			c.Resynced(e1, "REASON_CURSOR_TOO_OLD", 3, 5, 5)
		}, "past 3/0 which the consumer was never given"},
		{"requested before what was given", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1}, [2]uint64{3, 0})
			c.Resynced(e2, "REASON_EPOCH_MISMATCH", 2, 1, 2)
		}, "requested_seq 2, before 3 which the consumer was already given"},
		{"snapshot after a resync starts late", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1})
			c.Resynced(e1, "REASON_CURSOR_TOO_OLD", 2, 4, 4)
			facts(c, e1, [2]uint64{4, 1})
		}, "facts missing: expected 4/0, given 4/1"},
		{"incomplete", func(c *history.Consumer) {
			facts(c, e1, [2]uint64{2, 0}, [2]uint64{2, 1}, [2]uint64{3, 0}, [2]uint64{4, 0})
		}, "ended before it was given every fact of its epoch: next expected 4/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := published()
			c.record(h.Consumer("c1"))
			_, err := h.Check(true)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "consumer c1: event #") || !strings.Contains(err.Error(), "> #") {
				t.Fatalf("got %v, want an excerpt naming %q", err, c.want)
			}
			t.Log(err)
		})
	}
}
