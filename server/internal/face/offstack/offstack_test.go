package offstack

import (
	"errors"
	"testing"
)

// TestRun: f's error comes back to the caller, f sees what the caller
// wrote before and the caller sees what f wrote, and a panic in f is raised
// again on the caller's goroutine instead of ending the process.
func TestRun(t *testing.T) {
	want := errors.New("boom")
	x := 1
	if err := Run(func() error { x++; return want }); err != want || x != 2 {
		t.Fatalf("Run: err %v, x %d; want %v, 2", err, x, want)
	}
	defer func() {
		if p := recover(); p != "panic in f" {
			t.Fatalf("recovered %v, want the panic of f", p)
		}
	}()
	_ = Run(func() error { panic("panic in f") })
	t.Fatal("Run returned after f panicked")
}

// BenchmarkRun is the cost of moving work off the stack: one goroutine
// start and one channel handoff.
func BenchmarkRun(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Run(func() error { return nil })
	}
}
