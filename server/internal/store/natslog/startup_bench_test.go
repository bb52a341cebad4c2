package natslog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// largeCommit is a commit of about 900 KB: 15 facts of 60 KB each, keyed
// so that the latest-per-key table holds some of them.
func largeCommit(n int) []*ringcastv1.Fact {
	facts := make([]*ringcastv1.Fact, 15)
	for i := range facts {
		data, _ := structpb.NewStruct(map[string]any{"n": float64(n), "pad": strings.Repeat(string(rune('a'+i)), 60<<10)})
		facts[i] = &ringcastv1.Fact{Topic: "bench/startup", Type: "large", Key: fmt.Sprint(n % 64), Payload: &ringcastv1.Fact_Data{Data: data}}
	}
	return facts
}

// BenchmarkStartUpRead is a start on an embedded store of 256 MiB of
// large commits (about 900 KB each): Open, and the hub's rebuild reading
// every commit (the ring, the latest-per-key table). Its MB/s is the
// store read at start-up (docs/performance.md, "Start-up").
func BenchmarkStartUpRead(b *testing.B) {
	dir := b.TempDir()
	ns, nc := embedded(b, dir)
	l := openLog(b, nc, natslog.Options{})
	ctx := context.Background()
	const total = 256 << 20
	n := 0
	for {
		if _, err := l.Append(ctx, time.Now(), hub.Commit{Facts: largeCommit(n)}); err != nil {
			b.Fatal(err)
		}
		n++
		info, err := l.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if info.State.Bytes >= total {
			b.SetBytes(int64(info.State.Bytes))
			break
		}
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	b.ReportMetric(float64(n), "commits")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ns, nc := embedded(b, dir)
		b.StartTimer()
		l := openLog(b, nc, natslog.Options{})
		h, err := hub.NewContext(ctx, hub.Config{Log: l, Lease: -1, Heartbeat: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.Close()
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
		b.StartTimer()
	}
}
