package natslog_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestReadsCountDirectGets: a read in the stream's newest, partial block is
// one direct get of just what was asked (not the block from its start,
// then again what was asked); a
// read in a whole block is one direct get shared by later reads of it; a
// whole block that cannot be cached (a deleted message) still answers from
// the one read it took.
func TestReadsCountDirectGets(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	l := openLog(t, nc, natslog.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		if _, err := l.Append(ctx, time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(from uint64, max int) []uint64 {
		t.Helper()
		evs, err := l.Read(ctx, nil, from, max)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, ev := range evs {
			seqs = append(seqs, ev.Seq)
		}
		return seqs
	}
	msgs := uint64(0)
	reads := func(f func()) uint64 {
		r0, m0 := l.DirectGets()
		f()
		r1, m1 := l.DirectGets()
		msgs = m1 - m0
		return r1 - r0
	}
	if n := reads(func() {
		if got := read(5, 100); !equal(got, seqRange(5, 10)) {
			t.Fatalf("read from 5: %v", got)
		}
	}); n != 1 || msgs != 6 {
		t.Fatalf("a read in the partial block took %d direct gets of %d messages, want 1 of 6", n, msgs)
	}
	for i := 10; i < 1100; i++ {
		if _, err := l.Append(ctx, time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads(func() {
		for _, from := range []uint64{3, 500, 1000} {
			if got := read(from, 10); !equal(got, seqRange(from, from+9)) {
				t.Fatalf("read from %d: %v", from, got)
			}
		}
	}); n != 1 {
		t.Fatalf("three reads in a whole block took %d direct gets, want 1 (the block, cached)", n)
	}
	if n := reads(func() {
		if got := read(1030, 10); !equal(got, seqRange(1030, 1039)) {
			t.Fatalf("read from 1030: %v", got)
		}
	}); n != 1 || msgs != 10 {
		t.Fatalf("a read in the partial second block took %d direct gets of %d messages, want 1 of 10", n, msgs)
	}
	// A stream with a deleted message: block 1 (1025..2048) is whole but
	// not contiguous once it is complete.
	for i := 1100; i < 2100; i++ {
		if _, err := l.Append(ctx, time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "ringcast")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, 1500); err != nil {
		t.Fatal(err)
	}
	if n := reads(func() {
		got := read(1498, 4)
		if !equal(got, []uint64{1498, 1499, 1501, 1502}) {
			t.Fatalf("read from 1498 over deleted 1500: %v", got)
		}
	}); n != 1 {
		t.Fatalf("a read in an uncacheable whole block took %d direct gets, want 1", n)
	}
}
