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
	ctx, stopCtx := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopCtx()
	end, stop := secondSignal()
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the context did not end after a SIGTERM")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-end:
	case <-time.After(30 * time.Second):
		t.Fatal("the shutdown delay did not end after a second SIGTERM")
	}
}

// TestOneSignalLeavesTheDelay: one SIGTERM ends the context, not the
// shutdown delay.
func TestOneSignalLeavesTheDelay(t *testing.T) {
	ctx, stopCtx := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopCtx()
	end, stop := secondSignal()
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	select {
	case <-end:
		t.Fatal("one SIGTERM ended the shutdown delay")
	default:
	}
}
