package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalRightAfterTheFirst: a second SIGTERM sent as soon as the
// first has ended the context ends the shutdown delay: it is caught
// however soon it follows the first. (Two signals sent at once may merge
// into one, so the second waits for the first to be taken.)
func TestSecondSignalRightAfterTheFirst(t *testing.T) {
	ctx, end := sigterm(t)
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the context did not end after a SIGTERM")
	}
	kill(t)
	select {
	case <-end:
	case <-time.After(30 * time.Second):
		t.Fatal("the shutdown delay did not end after a second SIGTERM")
	}
}

// sigterm listens as "ringcast serve" does (a context ended by the first
// signal, and secondSignal), then sends the process a SIGTERM.
func sigterm(t *testing.T) (context.Context, <-chan struct{}) {
	ctx, stopCtx := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	t.Cleanup(stopCtx)
	end, stop := secondSignal()
	t.Cleanup(stop)
	kill(t)
	return ctx, end
}

func kill(t *testing.T) {
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
