package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// startChild runs "ringcast serve args..." as a process of its own (this
// test binary, see TestMain) and returns it with its URL and epoch.
func startChild(t *testing.T, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	a, _ := json.Marshal(append([]string{"serve"}, args...))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(a))
	var stderr logbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	bound := regexp.MustCompile(`msg="ringcast serving" addr=\S+ url=(\S+) epoch=([0-9a-f]{16})`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := bound.FindStringSubmatch(stderr.String()); m != nil {
			return cmd, m[1], m[2]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bind line; stderr: %s", stderr.String())
		}
	}
}

func keyed(key string, n float64) *ringcastv1.Fact {
	s, _ := structpb.NewStruct(map[string]any{"n": n})
	return &ringcastv1.Fact{Topic: "g/" + key, Type: "test.fact", Key: key, Payload: &ringcastv1.Fact_Data{Data: s}}
}

func readAll(t *testing.T, c ringcastv1connect.EventServiceClient, req *ringcastv1.SubscribeEventsRequest) []*ringcastv1.SubscribeEventsResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.SubscribeEvents(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var msgs []*ringcastv1.SubscribeEventsResponse
	for s.Receive() {
		msgs = append(msgs, s.Msg())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestRestartKeepsCursorsStateAndKeysWithTheEmbeddedStore: a ringcast
// process with --store embedded is stopped — killed with SIGKILL, or
// drained with SIGTERM (exit status 0) — and started again on the same
// --data-dir: same epoch, a cursor resumes without a resync, LATEST_PER_KEY
// is right, and an idempotency key still deduplicates.
func TestRestartKeepsCursorsStateAndKeysWithTheEmbeddedStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"kill -9", syscall.SIGKILL}, {"SIGTERM", syscall.SIGTERM}} {
		t.Run(tc.name, func(t *testing.T) { testEmbeddedRestart(t, tc.sig) })
	}
}

func testEmbeddedRestart(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	args := []string{"--addr", "127.0.0.1:0", "--store", "embedded", "--data-dir", dir, "--demo=false"}
	cmd, url, epoch := startChild(t, args...)
	c := ringcast.NewClient(url).RPC()
	var receipts []*ringcastv1.PublishResponse
	for i, key := range []string{"a", "b", "a"} {
		res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{
			Facts: []*ringcastv1.Fact{keyed(key, float64(i))}, IdempotencyKey: "p" + string(rune('0'+i)),
		}))
		if err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, res.Msg)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		t.Fatalf("ringcast serve after SIGTERM: %v, want exit status 0", err)
	}

	_, url2, epoch2 := startChild(t, args...)
	if epoch2 != epoch {
		t.Fatalf("epoch %s after %v, want %s", epoch2, sig, epoch)
	}
	c = ringcast.NewClient(url2).RPC()
	msgs := readAll(t, c, &ringcastv1.SubscribeEventsRequest{SinceSeq: receipts[0].Seq, InstanceEpoch: receipts[0].InstanceEpoch, EndAtHead: true})
	var seqs []uint64
	for _, m := range msgs {
		if m.GetResyncRequired() != nil {
			t.Fatalf("resync after %v: %v", sig, m)
		}
		if m.GetCommit() != nil {
			seqs = append(seqs, m.Seq)
		}
	}
	if len(seqs) != 2 || seqs[0] != receipts[1].Seq || seqs[1] != receipts[2].Seq {
		t.Fatalf("resume after %v: commits %v, want %d, %d", sig, seqs, receipts[1].Seq, receipts[2].Seq)
	}
	latest := map[string]float64{}
	for _, m := range readAll(t, c, &ringcastv1.SubscribeEventsRequest{Snapshot: ringcastv1.Snapshot_SNAPSHOT_LATEST_PER_KEY, EndAtHead: true}) {
		for _, f := range m.GetCommit().GetFacts() {
			latest[f.Key] = f.GetData().Fields["n"].GetNumberValue()
		}
	}
	if len(latest) != 2 || latest["a"] != 2 || latest["b"] != 1 {
		t.Fatalf("latest per key after %v: %v, want a=2 b=1", sig, latest)
	}
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{
		Facts: []*ringcastv1.Fact{keyed("b", 1)}, IdempotencyKey: "p1", // the same facts: a retry
	}))
	if err != nil || !res.Msg.Duplicate || res.Msg.Seq != receipts[1].Seq {
		t.Fatalf("retried key after %v: %v, %v; want a duplicate of seq %d", sig, res, err, receipts[1].Seq)
	}
}
