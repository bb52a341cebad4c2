package app_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/core/topic"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// scopeFact is a fact on topic with a unique key.
func scopeFact(topic, key string) *ringcastv1.Fact {
	return &ringcastv1.Fact{Topic: topic, Type: "t", Key: key, Payload: &ringcastv1.Fact_Data{Data: &structpb.Struct{}}}
}

// TestSubscribeScopedToGrant: a stream that names no topics is served
// restricted to the token's subscribe grant — in a replay, a
// LATEST_PER_KEY snapshot and live — and Progress covers what it skips,
// as for a topic filter; naming a topic inside the grant is served.
func TestSubscribeScopedToGrant(t *testing.T) {
	for _, p := range ringtest.Protocols {
		t.Run(string(p), func(t *testing.T) {
			k := authtest.NewKeys(t)
			cfg := ringtest.Config()
			cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, k.SecretFile
			cfg.Heartbeat = 300 * time.Millisecond // an idle stream's pending Progress is sent after this
			srv := ringtest.Start(t, cfg)
			grant := []string{"gauges/eden", "alerts"}
			reader := k.HS256(t, authtest.Claims("reader", nil, grant, time.Hour))
			writer := k.HS256(t, authtest.Claims("writer", []string{"*"}, nil, time.Hour))
			inScope := func(topic string) bool { return grantAllows(grant, topic) }

			pub := srv.Client(p)
			publish := func(facts ...*ringcastv1.Fact) uint64 {
				t.Helper()
				req := connect.NewRequest(&ringcastv1.PublishRequest{Facts: facts})
				authed(writer, req.Header())
				res, err := pub.Publish(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				return res.Msg.GetSeq()
			}
			a := publish(scopeFact("gauges/eden/g-1", "k1"), scopeFact("gauges/lune/g-2", "k2"))
			publish(scopeFact("gauges/lune/g-3", "k3"))
			c := publish(scopeFact("other/x", "x1"), scopeFact("alerts/flood", "a1"))
			head := publish(scopeFact("other/y", "y1"))

			rpc := srv.Client(p)
			open := func(req *ringcastv1.SubscribeEventsRequest) (*connect.ServerStreamForClient[ringcastv1.SubscribeEventsResponse], context.CancelFunc) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				r := connect.NewRequest(req)
				authed(reader, r.Header())
				st, err := rpc.SubscribeEvents(ctx, r)
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				return st, func() { cancel(); st.Close() }
			}
			// check fails on any fact outside the grant and returns the
			// commits' (seq, keys) and the Progress seqs.
			type seen struct {
				commits  map[uint64][]string
				progress []uint64
				caughtUp *ringcastv1.CaughtUp
			}
			check := func(m *ringcastv1.SubscribeEventsResponse, s *seen) {
				t.Helper()
				if cm := m.GetCommit(); cm != nil {
					for _, f := range cm.GetFacts() {
						if !inScope(f.GetTopic()) {
							t.Errorf("seq %d: fact on %s sent outside the grant", m.GetSeq(), f.GetTopic())
						}
						s.commits[m.GetSeq()] = append(s.commits[m.GetSeq()], f.GetKey())
					}
				}
				if m.GetProgress() != nil {
					s.progress = append(s.progress, m.GetSeq())
				}
				if cu := m.GetCaughtUp(); cu != nil {
					s.caughtUp = cu
				}
			}

			// Replay of the retained ring.
			st, done := open(&ringcastv1.SubscribeEventsRequest{EndAtHead: true})
			s := &seen{commits: map[uint64][]string{}}
			for st.Receive() {
				check(st.Msg(), s)
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			done()
			if len(s.commits) != 2 || len(s.commits[a]) != 1 || s.commits[a][0] != "k1" || len(s.commits[c]) != 1 || s.commits[c][0] != "a1" {
				t.Errorf("replay commits %v, want k1 at %d and a1 at %d", s.commits, a, c)
			}
			if len(s.progress) == 0 || s.progress[len(s.progress)-1] != head || s.caughtUp.GetHeadSeq() != head {
				t.Errorf("replay Progress %v, CaughtUp %v: want coverage to %d", s.progress, s.caughtUp, head)
			}

			// LATEST_PER_KEY snapshot.
			st, done = open(&ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true})
			s = &seen{commits: map[uint64][]string{}}
			for st.Receive() {
				check(st.Msg(), s)
			}
			done()
			if len(s.commits) != 2 || s.caughtUp.GetHeadSeq() != head {
				t.Errorf("snapshot commits %v, caught up %v", s.commits, s.caughtUp)
			}

			// Live, from the head; then a named topic inside the grant.
			st, done = open(&ringcastv1.SubscribeEventsRequest{SinceSeq: head, InstanceEpoch: srv.Hub().Epoch()})
			defer done()
			s = &seen{commits: map[uint64][]string{}}
			for s.caughtUp == nil && st.Receive() {
				check(st.Msg(), s)
			}
			publish(scopeFact("gauges/lune/g-2", "k2b"))
			mixed := publish(scopeFact("other/z", "z1"), scopeFact("gauges/eden/g-9", "k9"))
			last := publish(scopeFact("other/w", "w1"))
			for (len(s.progress) == 0 || s.progress[len(s.progress)-1] < last) && st.Receive() {
				check(st.Msg(), s)
			}
			if len(s.commits) != 1 || len(s.commits[mixed]) != 1 || s.commits[mixed][0] != "k9" {
				t.Errorf("live commits %v, want k9 at %d", s.commits, mixed)
			}
			if len(s.progress) == 0 || s.progress[len(s.progress)-1] != last {
				t.Errorf("live Progress %v, want one covering %d", s.progress, last)
			}

			st2, done2 := open(&ringcastv1.SubscribeEventsRequest{Topics: []string{"gauges/eden/g-9"}, EndAtHead: true})
			defer done2()
			s = &seen{commits: map[uint64][]string{}}
			for st2.Receive() {
				check(st2.Msg(), s)
			}
			if st2.Err() != nil || len(s.commits) != 1 {
				t.Errorf("named topic inside the grant: %v, commits %v", st2.Err(), s.commits)
			}
		})
	}
}

// grantAllows matches topic name against grant entries as the server does.
func grantAllows(grant []string, name string) bool {
	for _, g := range grant {
		if g == "*" || topic.Match(g, name) {
			return true
		}
	}
	return false
}
