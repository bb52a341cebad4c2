package faultproxy_test

import (
	"bytes"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo serves connections that echo what they read; it closes when the
// test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c); c.Close() })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dial(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second)) // hang guard
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo: %q %v, want %q", got, err, msg)
	}
}

func TestForwardsAndCuts(t *testing.T) {
	p := faultproxy.New(t, echo(t))
	c := dial(t, p)
	roundTrip(t, c, "hello")
	if n := p.Cut(); n != 1 {
		t.Fatalf("cut %d connections, want 1", n)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("after the cut: read %d, %v; want the connection closed", n, err)
	}
	roundTrip(t, dial(t, p), "again") // new connections still go through
	if s := p.Stats(); s.Conns != 2 || s.Cuts != 1 || s.Faults() != 1 {
		t.Fatalf("stats %v", s)
	}
}

// TestStallHoldsBytesUntilResume: a stalled direction forwards nothing
// (the reader's short deadline always expires: nothing can arrive in an
// hour-long stall), and every byte arrives once the stall ends.
func TestStallHoldsBytesUntilResume(t *testing.T) {
	for _, dir := range []faultproxy.Direction{faultproxy.Up, faultproxy.Down, faultproxy.Both} {
		t.Run(dir.String(), func(t *testing.T) {
			p := faultproxy.New(t, echo(t))
			c := dial(t, p)
			roundTrip(t, c, "warm")
			p.Stall(dir, time.Hour)
			if _, err := c.Write([]byte("held")); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if n, err := c.Read(make([]byte, 4)); n != 0 || !isTimeout(err) {
				t.Fatalf("read %d, %v during the stall; want nothing", n, err)
			}
			p.Resume()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			got := make([]byte, 4)
			if _, err := io.ReadFull(c, got); err != nil || string(got) != "held" {
				t.Fatalf("after the stall: %q %v", got, err)
			}
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestSlowDeliversEverything(t *testing.T) {
	p := faultproxy.New(t, echo(t))
	c := dial(t, p)
	p.Slow(time.Millisecond, time.Hour)
	msg := bytes.Repeat([]byte("0123456789"), 10000)
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("slowed echo: %v, equal %v", err, bytes.Equal(got, msg))
	}
}

// TestCutMidFrame: the client gets the start of what the server wrote and
// then the close, never the whole of it.
func TestCutMidFrame(t *testing.T) {
	p := faultproxy.New(t, echo(t))
	c := dial(t, p)
	roundTrip(t, c, "whole")
	p.CutMidFrame()
	if _, err := c.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatal(err)
	}
	if len(got) >= 10 || !bytes.HasPrefix([]byte("0123456789"), got) {
		t.Fatalf("got %q, want a strict prefix of the frame and then the close", got)
	}
}

func isReset(err error) bool { _, ok := err.(*net.OpError); return ok }

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	s := faultproxy.Schedule{Every: 50 * time.Millisecond, MaxStall: time.Second, MaxSlow: time.Second, MaxDelay: 5 * time.Millisecond}
	a, b, c := s.Faults(42, 32), s.Faults(42, 32), s.Faults(43, 32)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if slices.Equal(a, c) {
		t.Fatal("two seeds gave the same schedule")
	}
	kinds := map[string]bool{}
	for _, f := range a {
		kinds[f.Kind] = true
		if f.After < s.Every/2 || f.After >= s.Every*3/2 || f.For > s.MaxSlow || f.Delay > s.MaxDelay {
			t.Fatalf("fault %v outside the schedule's bounds", f)
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("32 faults of kinds %v, want all four", kinds)
	}
}
