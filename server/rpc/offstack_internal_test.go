package rpc

import (
	"errors"
	"testing"
)

// TestOffStack: f's error comes back to the caller, f sees what the caller
// wrote before and the caller sees what f wrote, and a panic in f is raised
// again on the caller's goroutine (where net/http recovers it) instead of
// ending the process.
func TestOffStack(t *testing.T) {
	want := errors.New("boom")
	x := 1
	if err := offStack(func() error { x++; return want }); err != want || x != 2 {
		t.Fatalf("offStack: err %v, x %d; want %v, 2", err, x, want)
	}
	defer func() {
		if p := recover(); p != "panic in f" {
			t.Fatalf("recovered %v, want the panic of f", p)
		}
	}()
	_ = offStack(func() error { panic("panic in f") })
	t.Fatal("offStack returned after f panicked")
}
