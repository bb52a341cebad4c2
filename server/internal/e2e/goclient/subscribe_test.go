package goclient_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// readAll ranges over sub until the iteration ends, failing on an error.
func readAll(t *testing.T, sub *ringcast.Subscription) []ringcast.Item {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var out []ringcast.Item
	for it, err := range sub.Items(ctx) {
		if err != nil {
			t.Fatalf("after %d items: %v", len(out), err)
		}
		out = append(out, it)
	}
	return out
}

func TestBreakMidCommitResumesAtNextFact(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			h := srv.Hub()
			var l ledger
			l.publish(t, h, "a", "a", "a") // seq 2
			l.publish(t, h, "a", "a")      // seq 3
			c := newClient(t, srv.URL, p)
			epoch := h.Epoch()

			sub := c.Subscribe(ringcast.WithEndAtHead())
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			var first []ringcast.Item
			for it, err := range sub.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, it)
				if it.Kind == ringcast.KindFact && it.Seq == 2 && it.Index == 1 {
					if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: epoch, Seq: 2, Fact: 2}); pos(got) != want || pos(it.Cursor) != want {
						t.Errorf("inside the body: Cursor() = %v, Item.Cursor = %v; want %v (the item in hand counts)", got, it.Cursor, want)
					}
					break
				}
			}
			if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: epoch, Seq: 2, Fact: 2}); pos(got) != want {
				t.Fatalf("after break on fact 2/1: cursor %v, want %v", got, want)
			}
			text, err := sub.Cursor().MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			var saved ringcast.Cursor
			if err := saved.UnmarshalText(text); err != nil {
				t.Fatal(err)
			}

			rest := readAll(t, c.Subscribe(ringcast.WithCursor(saved), ringcast.WithEndAtHead()))
			checkExactlyOnce(t, append(got(first), got(rest)...), l.expect(0))
			if k := rest[len(rest)-1]; k.Kind != ringcast.KindCaughtUp || k.HeadSeq != 3 {
				t.Errorf("last item %+v, want CaughtUp at 3", k)
			}
			if f := rest[0]; f.Kind != ringcast.KindFact || f.Seq != 2 || f.Index != 2 || !f.Last {
				t.Errorf("resumed with %+v, want fact 2/2 (last)", f)
			}

			// Ranging the same subscription again continues from its cursor.
			sub2 := c.Subscribe(ringcast.WithCursor(saved), ringcast.WithEndAtHead())
			for it, err := range sub2.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if it.Kind == ringcast.KindFact {
					break
				}
			}
			again := readAll(t, sub2)
			checkExactlyOnce(t, got(again), l.expect(2))
		})
	}
}

func TestFilteredLastIsLastDeliveredFact(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			h := srv.Hub()
			var l ledger
			l.publish(t, h, "a/x", "b/x", "a/y", "b/y") // seq 2: delivers 0 and 2
			l.publish(t, h, "b/z")                      // seq 3: filtered out, covered by Progress
			c := newClient(t, srv.URL, p)
			epoch := h.Epoch()

			sub := c.Subscribe(ringcast.WithTopics("a"), ringcast.WithEndAtHead())
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			var first []ringcast.Item
			for it, err := range sub.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, it)
				if it.Kind == ringcast.KindFact {
					if it.Index != 0 || it.Last {
						t.Fatalf("first fact %+v, want index 0, not last", it)
					}
					break
				}
			}
			if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: epoch, Seq: 2, Fact: 1}); pos(got) != want {
				t.Fatalf("cursor %v, want %v", got, want)
			}
			rest := readAll(t, c.Subscribe(ringcast.WithCursor(sub.Cursor()), ringcast.WithTopics("a"), ringcast.WithEndAtHead()))
			all := append(got(first), got(rest)...)
			checkExactlyOnce(t, all, l.expect(0, "a"))
			if all[1].last != true {
				t.Errorf("fact index 2 of 4 is the last the filter delivers: want last=true")
			}
			// Progress over the filtered commit moved the cursor to 3.
			var fin ringcast.Cursor
			for _, it := range rest {
				if it.Kind == ringcast.KindCaughtUp {
					fin = it.Cursor
				}
			}
			if want := (ringcast.Cursor{Epoch: epoch, Seq: 3}); pos(fin) != want {
				t.Errorf("cursor at CaughtUp %v, want %v (Progress covers the filtered commit)", fin, want)
			}
		})
	}
}

func TestUntilBound(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			h := srv.Hub()
			var l ledger
			for range 5 {
				l.publish(t, h, "a", "a") // seq 2..6
			}
			c := newClient(t, srv.URL, p)
			epoch := h.Epoch()
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			sub := c.Subscribe(ringcast.WithUntil(4))
			var first []ringcast.Item
			for it, err := range sub.Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, it)
				if it.Seq == 4 && it.Index == 0 {
					break // inside the bound's last commit
				}
			}
			if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: epoch, Seq: 4, Fact: 1}); pos(got) != want {
				t.Fatalf("cursor %v, want %v", got, want)
			}
			rest := readAll(t, sub) // ends on its own: the bound is reached
			want := l.expect(0)[:6]
			checkExactlyOnce(t, append(got(first), got(rest)...), want)
			if got, want := sub.Cursor(), (ringcast.Cursor{Epoch: epoch, Seq: 4}); pos(got) != want {
				t.Errorf("final cursor %v, want %v", got, want)
			}
			if more := readAll(t, sub); len(more) != 0 {
				t.Errorf("a finished bounded read yielded %d more items", len(more))
			}
		})
	}
}

// TestRandomStopsResumeExactlyOnce is the property: a consumer that stops
// at random facts (mid-commit included), persists its cursor and resumes
// from the file, while commits keep being published, sees every fact
// exactly once, in order, with correct end-of-commit flags.
func TestRandomStopsResumeExactlyOnce(t *testing.T) {
	for _, p := range ringtest.Protocols {
		for _, filter := range [][]string{nil, {"t/a"}} {
			name := string(p) + "/all"
			if filter != nil {
				name = string(p) + "/filtered"
			}
			t.Run(name, func(t *testing.T) {
				cfg := ringtest.Config()
				cfg.Window = 1024
				srv := ringtest.Start(t, cfg)
				h := srv.Hub()
				c := newClient(t, srv.URL, p)
				for seed := range uint64(2) {
					rng := rand.New(rand.NewPCG(seed, uint64(len(filter))))
					path := filepath.Join(t.TempDir(), "cursor")
					var l ledger
					topicsOf := func() []string {
						ts := make([]string, 1+rng.IntN(4))
						for i := range ts {
							ts[i] = []string{"t/a", "t/b"}[rng.IntN(2)]
						}
						return ts
					}
					for range 10 {
						l.publish(t, h, topicsOf()...)
					}
					_, head := h.Bounds()
					start := head - 10 // resume after what the earlier seeds published
					if err := ringcast.SaveCursor(path, ringcast.Cursor{Epoch: h.Epoch(), Seq: start}); err != nil {
						t.Fatal(err)
					}
					var all []ringcast.Item
					published := 10
					for session := 0; ; session++ {
						if session > 500 {
							t.Fatal("no end after 500 sessions")
						}
						cur, err := ringcast.LoadCursor(path)
						if err != nil {
							t.Fatal(err)
						}
						opts := []ringcast.SubscribeOption{ringcast.WithCursor(cur), ringcast.WithEndAtHead(), ringcast.WithTopics(filter...)}
						sub := c.Subscribe(opts...)
						stopAfter := 1 + rng.IntN(4)
						facts, caughtUp := 0, false
						ctx, cancel := context.WithTimeout(context.Background(), waitLong)
						for it, err := range sub.Items(ctx) {
							if err != nil {
								t.Fatal(err)
							}
							if it.Kind == ringcast.KindResynced {
								t.Fatalf("unexpected resync %+v", it.Resync)
							}
							all = append(all, it)
							if it.Kind == ringcast.KindCaughtUp {
								caughtUp = true
							}
							if it.Kind == ringcast.KindFact {
								if facts++; facts == stopAfter {
									break
								}
							}
						}
						cancel()
						if err := ringcast.SaveCursor(path, sub.Cursor()); err != nil {
							t.Fatal(err)
						}
						if caughtUp {
							if published >= 30 {
								break
							}
						}
						if published < 30 {
							l.publish(t, h, topicsOf()...)
							published++
						}
					}
					checkExactlyOnce(t, got(all), l.expect(start, filter...))
				}
			})
		}
	}
}

func TestProxyCutsLoseAndRepeatNothing(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			cfg := ringtest.Config()
			cfg.Window = 4096
			srv := ringtest.Start(t, cfg)
			h := srv.Hub()
			proxy := newCutProxy(t, srv.Addr)
			c := newClient(t, proxy.URL(), p)
			var l ledger
			l.publish(t, h, "a")
			sub := c.Subscribe()
			cons := consume(t, sub)
			cons.until(t, isCaughtUp)

			const commits = 300
			stop := make(chan struct{})
			defer close(stop)
			cutterDone := make(chan int, 1)
			go func() {
				rng := rand.New(rand.NewPCG(1, 2))
				cuts := 0
				defer func() { cutterDone <- cuts }()
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(2+rng.IntN(30)) * time.Millisecond):
						cuts += proxy.Cut()
					}
				}
			}()
			pubDone := make(chan struct{})
			go func() {
				defer close(pubDone)
				rng := rand.New(rand.NewPCG(3, 4))
				for i := range commits {
					ts := make([]string, 1+rng.IntN(3))
					for j := range ts {
						ts[j] = "a"
					}
					l.publish(t, h, ts...)
					if i%2 == 0 {
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
					}
				}
			}()
			ringtest.Wait(t, pubDone, waitLong, "the publisher")
			want := l.expect(0)
			gotFacts := cons.collectFacts(t, len(want)-1)
			stop <- struct{}{}
			cuts := ringtest.Wait(t, cutterDone, waitLong, "the cutter")
			if cuts == 0 {
				t.Fatal("the proxy never cut a connection: the test proved nothing")
			}
			checkExactlyOnce(t, got(gotFacts), want[1:])
			t.Logf("%d cuts", cuts)
		})
	}
}

func TestLatestPerKeySnapshot(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			h := srv.Hub()
			var l ledger
			l.publish(t, h, "a", "a") // keys c1-f0, c1-f1
			l.publish(t, h, "a")      // key c2-f0
			c := newClient(t, srv.URL, p)
			items := readAll(t, c.Subscribe(ringcast.WithSnapshot(ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY), ringcast.WithEndAtHead()))
			// Every key is distinct, so every fact is current.
			checkExactlyOnce(t, got(items), l.expect(0))
			if last := items[len(items)-1]; last.Kind != ringcast.KindCaughtUp || last.Cursor.Seq != 3 {
				t.Errorf("last item %+v, want CaughtUp with the cursor at head 3", last)
			}
		})
	}
}

// TestCursorNamesItsCommit: the Go client's cursor holds the fingerprint
// of the commit at its seq, and a subscription from it resumes; one whose
// fingerprint names another commit at that seq (a cursor kept across a
// restore of the store) is resynced with REASON_COMMIT_MISMATCH and then
// given the snapshot, on every protocol.
func TestCursorNamesItsCommit(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			srv := ringtest.Start(t, ringtest.Config())
			h := srv.Hub()
			var l ledger
			l.publish(t, h, "a") // seq 2
			l.publish(t, h, "a") // seq 3
			c := newClient(t, srv.URL, p)
			var at ringcast.Cursor
			for _, it := range readAll(t, c.Subscribe(ringcast.WithEndAtHead())) {
				if it.Kind == ringcast.KindFact && it.Seq == 2 {
					at = it.Cursor
				}
			}
			if at.Seq != 2 || at.Fingerprint == 0 {
				t.Fatalf("cursor after commit 2: %v, want one with a fingerprint", at)
			}
			var seqs []uint64
			for _, it := range readAll(t, c.Subscribe(ringcast.WithCursor(at), ringcast.WithEndAtHead())) {
				if it.Kind == ringcast.KindResynced {
					t.Fatalf("resume from %v resynced: %v", at, it.Resync)
				}
				if it.Kind == ringcast.KindFact {
					seqs = append(seqs, it.Seq)
				}
			}
			if len(seqs) != 1 || seqs[0] != 3 {
				t.Fatalf("resume from %v: commits %v, want [3]", at, seqs)
			}
			other := at
			other.Fingerprint ^= 1
			items := readAll(t, c.Subscribe(ringcast.WithCursor(other), ringcast.WithEndAtHead()))
			if len(items) == 0 || items[0].Kind != ringcast.KindResynced || items[0].Resync.Reason != ringcastv1.Reason_REASON_COMMIT_MISMATCH {
				t.Fatalf("resume from %v: %v, want a resync with COMMIT_MISMATCH first", other, items)
			}
			if last := items[len(items)-1]; last.Kind != ringcast.KindCaughtUp || last.Cursor.Seq != 3 || last.Cursor.Fingerprint == 0 {
				t.Fatalf("after the resync: %v, want the snapshot to 3 and caught_up", items)
			}
		})
	}
}
