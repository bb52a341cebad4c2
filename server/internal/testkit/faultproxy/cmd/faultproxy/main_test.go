package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

// TestCommand drives the command as a test suite does: the first line
// names the address and the seed, each command is answered in order, and
// stdin EOF prints the faults and the counts and ends it. It asserts on
// counts and the seeded schedule only, never on what happens in a time.
func TestCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	t.Setenv("RINGCAST_FAULT_SEED", "")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"--target", ln.Addr().String(), "--seed", "42", "--every", "1ms"}, inR, outW)
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("no more output: %v", out.Err())
		}
		return out.Text()
	}
	m := regexp.MustCompile(`^addr=(127\.0\.0\.1:\d+) seed=42$`).FindStringSubmatch(next())
	if m == nil {
		t.Fatal("first line: want addr=… seed=42")
	}
	c, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil { // echoed: the pair is live
		t.Fatal(err)
	}
	// The commands are written at once: the replies come in their order
	// (each faults is done before the next command is read), and faults
	// answers with its count, however long its pauses take.
	cmds := []struct{ cmd, want string }{
		{"cut", "ok cut 1"},
		{"resume", "ok resume"},
		{"bogus", `error unknown command "bogus" (want faults <count>, cut or resume)`},
		{"faults nope", `error faults "nope": want a count from 1 to 100000`},
		{"faults 0", `error faults "0": want a count from 1 to 100000`},
		{"faults 2", "ok faults 2"},
		{"resume", "ok resume"},
		{"faults 3", "ok faults 3"},
		{"resume", "ok resume"},
	}
	var all strings.Builder
	for _, c := range cmds {
		all.WriteString(c.cmd + "\n")
	}
	go func() { _, _ = io.WriteString(inW, all.String()); inW.Close() }()
	for _, c := range cmds {
		if got := next(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
	// After EOF: the schedule's first five faults, the second command
	// going on from the first, then the counts (one cut by hand).
	var want []string
	counts := map[string]int{"cut": 1}
	for _, f := range (faultproxy.Schedule{Every: time.Millisecond, MaxStall: 300 * time.Millisecond, MaxSlow: 300 * time.Millisecond, MaxDelay: 2 * time.Millisecond}).Faults(42, 5) {
		want = append(want, "fault "+f.String())
		counts[f.Kind]++
	}
	want = append(want, fmt.Sprintf("stats conns=1 cuts=%d stalls=%d slows=%d mid-frame-cuts=%d faults=%d",
		counts["cut"], counts["stall"], counts["slow"], counts["cut-mid-frame"], 1+5))
	var got []string
	for out.Scan() {
		got = append(got, out.Text())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("after EOF:\ngot  %q\nwant %q", got, want)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--target", "127.0.0.1:1", "extra"},
		{"--target", "127.0.0.1:1", "--seed", "-1"},
		{"--target", "127.0.0.1:1", "--every", "0s"},
	} {
		if err := run(context.Background(), args, strings.NewReader(""), io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
