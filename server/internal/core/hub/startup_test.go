package hub_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// stallingLog is a sliceLog whose Follow delivers the commits up to stall
// and then nothing more: a rebuild that never reaches the Log's head.
type stallingLog struct {
	*sliceLog
	stall uint64
}

func (l stallingLog) Follow(ctx context.Context, from uint64, apply func(*hub.Event)) error {
	return l.sliceLog.Follow(ctx, from, func(ev *hub.Event) {
		if ev.Seq <= l.stall {
			apply(ev)
			return
		}
		<-ctx.Done()
	})
}

// records is a slog handler that passes each record's message on.
type records chan string

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r <- rec.Message:
	default:
	}
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// TestStartUpReportsProgressAndStopsWhenCancelled: a rebuild from a Log
// that does not reach the Log's head logs how far it is, and NewContext
// returns the context's error when its context is cancelled meanwhile (the
// process told to stop while it starts), rather than waiting on.
func TestStartUpReportsProgressAndStopsWhenCancelled(t *testing.T) {
	l := newSliceLog(testLogEpoch)
	for i := range 10 {
		if _, err := l.Append(context.Background(), time.Now(), hub.Commit{Facts: []*ringcastv1.Fact{fact("t", "", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	logs := make(records, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		h, err := hub.NewContext(ctx, hub.Config{Log: stallingLog{l, 5}, Window: 16, Logger: slog.New(logs)})
		if err == nil {
			h.Close()
		}
		done <- err
	}()
	guard := time.After(60 * time.Second)
	for progress := false; !progress; {
		select {
		case msg := <-logs:
			progress = msg == "rebuilding from the log"
		case err := <-done:
			t.Fatalf("NewContext returned %v before the rebuild was cancelled", err)
		case <-guard:
			t.Fatal("no progress of the rebuild was logged")
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("NewContext after its context was cancelled: %v, want context.Canceled", err)
		}
	case <-guard:
		t.Fatal("NewContext did not return after its context was cancelled")
	}
}
