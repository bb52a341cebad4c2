package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
)

// TestCommand drives the command as a test suite does: the first line
// names the address and the seed, each command is answered, and stdin EOF
// prints the faults and the counts and ends it.
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
	for _, step := range []struct{ cmd, want string }{
		{"cut", "ok cut 1"},
		{"resume", "ok resume"},
		{"bogus", `error unknown command "bogus" (want faults <duration>, cut or resume)`},
		{"faults nope", `error faults "nope": want a positive duration`},
	} {
		if _, err := io.WriteString(inW, step.cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != step.want {
			t.Errorf("%s: got %q, want %q", step.cmd, got, step.want)
		}
	}
	if _, err := io.WriteString(inW, "faults 20ms\n"); err != nil {
		t.Fatal(err)
	}
	if got := next(); !strings.HasPrefix(got, "ok faults ") || got == "ok faults 0" {
		t.Errorf("faults: got %q, want some injected", got)
	}
	inW.Close()
	var last string
	faults := 0
	for out.Scan() {
		last = out.Text()
		if strings.HasPrefix(last, "fault +") {
			faults++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if faults == 0 || !regexp.MustCompile(`^stats conns=1 cuts=\d+ stalls=\d+ slows=\d+ mid-frame-cuts=\d+ faults=\d+$`).MatchString(last) {
		t.Errorf("after EOF: %d fault lines, last line %q", faults, last)
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
