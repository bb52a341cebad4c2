package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// fingerprints reads the stream from a snapshot to head and returns the
// fingerprint of every positioned response by seq, failing on a
// positioned response without one.
func fingerprints(t *testing.T, c ringcastv1connect.EventServiceClient, req *ringcastv1.SubscribeEventsRequest) map[uint64]uint32 {
	t.Helper()
	fps := map[uint64]uint32{}
	for _, m := range subscribe(t, c, req).rest() {
		if m.Seq == 0 {
			if m.Fingerprint != 0 {
				t.Fatalf("unpositioned response with a fingerprint: %v", m)
			}
			continue
		}
		if m.Fingerprint == 0 {
			t.Fatalf("positioned response without a fingerprint: %v", m)
		}
		fps[m.Seq] = m.Fingerprint
	}
	return fps
}

// TestCursorNamesItsCommit: every positioned response carries the
// fingerprint of the event at its seq — the same on a filtered stream's
// commit and Progress, a resumed stream and a latest-per-key snapshot — and
// a resume whose fingerprint is not the one of the commit at its seq is
// answered ResyncRequired(COMMIT_MISMATCH) (Gap with SNAPSHOT_INLINE),
// whether it stops inside the commit or at head; a cursor without a
// fingerprint is served by its epoch and seq (docs/protocol.md,
// "Positions").
func TestCursorNamesItsCommit(t *testing.T) {
	forEachStoreAndProtocol(t, func(t *testing.T, store ringtest.Store, p ringcast.Protocol) {
		srv := store.Start(t, ringtest.Config())
		c := srv.Client(p)
		var seqs []uint64
		for i := range 4 {
			seqs = append(seqs, publish(t, c, fact("a/x", "k", i), fact("b/x", "", i)))
		}
		epoch, head := srv.Hub().Epoch(), seqs[3]
		all := fingerprints(t, c, &ringcastv1.SubscribeEventsRequest{EndAtHead: true})
		for _, s := range seqs {
			if all[s] == 0 {
				t.Fatalf("commit %d has no fingerprint in %v", s, all)
			}
		}
		if all[seqs[0]] == all[seqs[1]] {
			t.Fatalf("two commits with one fingerprint: %v", all)
		}
		// The same on a filtered stream (commits cut to their matching
		// facts, and a Progress to head), from a cursor, and in a
		// latest-per-key snapshot.
		filtered := fingerprints(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: seqs[0], InstanceEpoch: epoch, SinceFingerprint: all[seqs[0]], Topics: []string{"zzz"}, EndAtHead: true})
		if filtered[head] != all[head] {
			t.Fatalf("Progress to head carries %08x, the commit at head %08x", filtered[head], all[head])
		}
		for _, req := range []*ringcastv1.SubscribeEventsRequest{
			{SinceSeq: seqs[0], InstanceEpoch: epoch, SinceFingerprint: all[seqs[0]], Topics: []string{"a"}, EndAtHead: true},
			{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true},
			{SinceSeq: seqs[1], SinceFact: 1, InstanceEpoch: epoch, SinceFingerprint: all[seqs[1]], EndAtHead: true},
		} {
			for s, fp := range fingerprints(t, c, req) {
				if fp != all[s] {
					t.Fatalf("%v: seq %d carries %08x, the snapshot %08x", req, s, fp, all[s])
				}
			}
		}

		served := []*ringcastv1.SubscribeEventsRequest{
			{SinceSeq: seqs[1], InstanceEpoch: epoch, SinceFingerprint: all[seqs[1]], EndAtHead: true},
			{SinceSeq: seqs[1], InstanceEpoch: epoch, EndAtHead: true}, // no fingerprint: as before
			{SinceSeq: head, InstanceEpoch: epoch, SinceFingerprint: all[head], EndAtHead: true},
		}
		for _, req := range served {
			got := commitSeqs(subscribe(t, c, req).rest())
			if want := seqs[indexOf(seqs, req.SinceSeq)+1:]; !equalSeqs(got, want) {
				t.Fatalf("resume %v: commits %v, want %v", req, got, want)
			}
		}

		other := func(seq uint64) uint32 { return all[seq] ^ 0x80000000 }
		mismatched := []*ringcastv1.SubscribeEventsRequest{
			{SinceSeq: seqs[1], InstanceEpoch: epoch, SinceFingerprint: other(seqs[1])},
			{SinceSeq: seqs[1], InstanceEpoch: epoch, SinceFingerprint: all[seqs[2]]},
			{SinceSeq: head, InstanceEpoch: epoch, SinceFingerprint: other(head)},
			{SinceSeq: seqs[2], SinceFact: 1, InstanceEpoch: epoch, SinceFingerprint: other(seqs[2])},
		}
		for _, req := range mismatched {
			got := subscribe(t, c, req).rest()
			rr := got[len(got)-1].GetResyncRequired()
			if len(got) != 1 || rr.GetReason() != ringcastv1.Reason_REASON_COMMIT_MISMATCH || rr.GetRequestedSeq() != req.SinceSeq || rr.GetHeadSeq() != head {
				t.Fatalf("resume %v: %v, want only ResyncRequired(COMMIT_MISMATCH, requested %d, head %d)", req, got, req.SinceSeq, head)
			}
		}
		inline := proto.CloneOf(mismatched[0])
		inline.OnUnservable, inline.EndAtHead = ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE, true
		got := subscribe(t, c, inline).rest()
		if len(got) == 0 || got[0].GetGap().GetReason() != ringcastv1.Reason_REASON_COMMIT_MISMATCH || !equalSeqs(commitSeqs(got), seqs) || !isCaughtUp(got[len(got)-1]) {
			t.Fatalf("inline: %v, want Gap(COMMIT_MISMATCH), the snapshot %v, CaughtUp", got, seqs)
		}

		// A fingerprint without a seq names nothing: invalid_argument.
		s, err := c.SubscribeEvents(context.Background(), connect.NewRequest(&ringcastv1.SubscribeEventsRequest{SinceFingerprint: 7}))
		if err == nil {
			for s.Receive() {
			}
			err = s.Err()
			_ = s.Close()
		}
		if ce := new(connect.Error); !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || !strings.Contains(ce.Message(), "since_fingerprint") {
			t.Fatalf("since_fingerprint without since_seq: %v, want invalid_argument naming it", err)
		}

		// Each of them counted as its own outcome.
		const line = `ringcast_subscribes_total{face="connect",outcome="commit_mismatch"} `
		m := ringtest.Scrape(t, srv.URL)
		i := strings.Index(m, line)
		if i < 0 || !strings.HasPrefix(m[i+len(line):], fmt.Sprint(len(mismatched)+1)+"\n") {
			t.Fatalf("want %s%d in the metrics:\n%s", line, len(mismatched)+1, m)
		}
	})
}

func indexOf(seqs []uint64, s uint64) int {
	for i, x := range seqs {
		if x == s {
			return i
		}
	}
	return -1
}
