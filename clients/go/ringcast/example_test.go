package ringcast_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// startExampleServer runs an empty ringcast server (`ringcast serve` on
// loopback, the binary TestMain found) and returns its URL and a stop
// function.
func startExampleServer() (url string, stop func()) {
	cmd := exec.Command(serverBin, "serve", "--addr", "127.0.0.1:0", "--demo=false")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	// The first log line that names the URL says the server is listening.
	lines := bufio.NewScanner(stderr)
	for url == "" && lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), " url="); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	if url == "" {
		_ = cmd.Process.Kill()
		panic(fmt.Sprintf("%s serve ended without a URL: %v", serverBin, cmd.Wait()))
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return url, func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

func gauge(id string, level float64) *ringcastv1.Fact {
	data, _ := structpb.NewStruct(map[string]any{"level_m": level})
	return &ringcastv1.Fact{Topic: "gauges/ribble/" + id, Type: "gauge.level", Key: id, Payload: &ringcastv1.Fact_Data{Data: data}}
}

// A consumer reads what the server holds, then stops at the head. Without
// WithEndAtHead it would keep tailing, reconnecting on its own; persisting
// Item.Cursor (or Subscription.Cursor) lets a later run continue exactly
// after the last fact handled.
func ExampleSubscription_Items() {
	url, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c := ringcast.NewClient(url)
	defer c.CloseIdleConnections()

	// Two commits: seq 2 (two facts) and seq 3. Seq 1 is the server's
	// bind-time status, which moves the cursor but is not a fact.
	if _, err := c.Publish(ctx, []*ringcastv1.Fact{gauge("g-014", 1.2), gauge("g-015", 0.8)}, ""); err != nil {
		panic(err)
	}
	if _, err := c.Publish(ctx, []*ringcastv1.Fact{gauge("g-014", 1.3)}, ""); err != nil {
		panic(err)
	}

	sub := c.Subscribe(ringcast.WithTopics("gauges/ribble"), ringcast.WithEndAtHead())
	for it, err := range sub.Items(ctx) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch it.Kind {
		case ringcast.KindFact:
			fmt.Printf("seq=%d index=%d last=%v %s level=%v\n", it.Seq, it.Index, it.Last, it.Fact.GetKey(), it.Fact.GetData().AsMap()["level_m"])
		case ringcast.KindCaughtUp:
			fmt.Printf("caught up at %d\n", it.HeadSeq)
		case ringcast.KindResynced:
			fmt.Printf("resynced: %v\n", it.Resync.Reason)
		}
	}
	cur := sub.Cursor()
	fmt.Printf("cursor at seq %d, fact %d\n", cur.Seq, cur.Fact)
	// Output:
	// seq=2 index=0 last=false g-014 level=1.2
	// seq=2 index=1 last=true g-015 level=0.8
	// seq=3 index=0 last=true g-014 level=1.3
	// caught up at 3
	// cursor at seq 3, fact 0
}

// Commit publishes one commit and retries it safely: every attempt carries
// the same idempotency key, so a receipt lost on the way back never turns
// into a second commit.
func ExampleClient_Commit() {
	url, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c := ringcast.NewClient(url)
	defer c.CloseIdleConnections()

	r, err := c.Commit(ctx, []*ringcastv1.Fact{gauge("g-014", 1.2)}, ringcast.WithIdempotencyKey("reading-g-014-0600"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("seq=%d duplicate=%v\n", r.GetSeq(), r.GetDuplicate())
	// The same key again (a retry after a crash, say) appends nothing.
	r, err = c.Commit(ctx, []*ringcastv1.Fact{gauge("g-014", 1.2)}, ringcast.WithIdempotencyKey("reading-g-014-0600"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("seq=%d duplicate=%v\n", r.GetSeq(), r.GetDuplicate())
	// Output:
	// seq=2 duplicate=false
	// seq=2 duplicate=true
}

// A consumer that persists its cursor in a file continues where it stopped:
// run one reads a fact and stops; run two, from the file, gets the next.
func ExampleClient_Outcome() {
	url, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c := ringcast.NewClient(url)
	defer c.CloseIdleConnections()

	if _, err := c.Commit(ctx, []*ringcastv1.Fact{gauge("g-014", 1.2)}, ringcast.WithIdempotencyKey("reading-g-014-0600")); err != nil {
		panic(err)
	}
	// Did it apply? A read, never a write.
	for _, key := range []string{"reading-g-014-0600", "reading-g-014-0700"} {
		o, err := c.Outcome(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: applied=%v seq=%d remembered=%v\n", key, o.Applied, o.Receipt.GetSeq(), !o.RememberedSince.IsZero())
	}
	// Output:
	// reading-g-014-0600: applied=true seq=2 remembered=true
	// reading-g-014-0700: applied=false seq=0 remembered=true
}

func ExampleWithSinceTime() {
	url, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c := ringcast.NewClient(url)
	defer c.CloseIdleConnections()

	var times []time.Time
	for _, level := range []float64{1.2, 1.3, 1.4} {
		r, err := c.Commit(ctx, []*ringcastv1.Fact{gauge("g-014", level)})
		if err != nil {
			panic(err)
		}
		times = append(times, r.GetEventTime().AsTime())
	}
	// What happened since the second reading? (Not a snapshot: every
	// commit at or after the time, oldest first.)
	sub := c.Subscribe(ringcast.WithSinceTime(times[1]), ringcast.WithEndAtHead())
	for it, err := range sub.Items(ctx) {
		if err != nil {
			panic(err)
		}
		if it.Kind == ringcast.KindFact {
			fmt.Println("seq", it.Seq, it.Fact.GetData().GetFields()["level_m"].GetNumberValue())
		}
	}
	// Output:
	// seq 3 1.3
	// seq 4 1.4
}

func ExampleLoadCursor() {
	url, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c := ringcast.NewClient(url)
	defer c.CloseIdleConnections()
	if _, err := c.Commit(ctx, []*ringcastv1.Fact{gauge("g-014", 1.2), gauge("g-015", 0.8), gauge("g-016", 2.1)}); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "ringcast-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "app.cursor")

	for run := 1; run <= 2; run++ {
		cur, err := ringcast.LoadCursor(file) // missing file: the zero cursor
		if err != nil {
			panic(err)
		}
		sub := c.Subscribe(ringcast.WithCursor(cur), ringcast.WithTopics("gauges"))
		for it, err := range sub.Items(ctx) {
			if err != nil {
				panic(err)
			}
			if it.Kind != ringcast.KindFact {
				continue
			}
			fmt.Printf("run %d: %s\n", run, it.Fact.GetKey())
			if err := ringcast.SaveCursor(file, it.Cursor); err != nil {
				panic(err)
			}
			break // stop after one fact (mid-commit): the file says where
		}
	}
	// Output:
	// run 1: g-014
	// run 2: g-015
}

// WithTokenSource sends "Authorization: Bearer <token>" with a token the
// source returns for each request (and each reconnect), so a token that
// expires is replaced without restarting the subscription. Here the source
// stands in for reading a refreshed token from a file or an identity
// provider (this example server does not check tokens).
func ExampleWithTokenSource() {
	url, stop := startExampleServer()
	defer stop()
	calls := 0
	source := func(ctx context.Context) (string, error) {
		calls++
		return fmt.Sprintf("token-%d", calls), nil
	}
	c := ringcast.NewClient(url, ringcast.WithTokenSource(source))
	defer c.CloseIdleConnections()
	st, err := c.Status(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("window:", st.GetStatus().GetWindow(), "token requested:", calls > 0)
	// Output:
	// window: 1024 token requested: true
}
