// Command faultproxy runs the test fault proxy (server/internal/testkit/faultproxy)
// as a process, for test suites outside Go (clients/ts/test/faults.test.ts):
//
//	faultproxy --target 127.0.0.1:8080 [--seed N] [--every 150ms] [--max-stall 300ms] [--max-slow 300ms] [--max-delay 2ms]
//
// It listens on a free loopback port and prints, as its first line,
//
//	addr=127.0.0.1:41234 seed=1796042378361019311
//
// The seed is --seed, else RINGCAST_FAULT_SEED, else a fresh one. It then
// reads commands, one a line, on stdin. They run one at a time, in order:
// each is answered with one line once it is done, before the next is read,
// so the replies come in the order of the commands.
//
//	faults 10     inject the next 10 faults of the seeded schedule,   → ok faults 10
//	              each after its pause (about --every); a stall or
//	              slowdown among them runs its course, or until resume
//	cut           cut every live connection                           → ok cut <n cut>
//	resume        end stalls and slowdowns now                        → ok resume
//
// The schedule goes on from one faults command to the next: the faults
// injected in a run are the schedule's first ones, whatever the counts.
//
// On stdin EOF, SIGTERM or SIGINT it stops (a signal interrupts a faults
// command, answered "error faults <n>: interrupted after <k>"), prints each
// fault it injected ("fault +153ms stall up for 212ms") and then its counts
//
//	stats conns=12 cuts=3 stalls=2 slows=1 mid-frame-cuts=1 faults=7
//
// and exits 0.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/faultproxy"
)

// maxFaults bounds one faults command (the schedule is drawn whole).
const maxFaults = 100_000

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faultproxy:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("faultproxy", flag.ContinueOnError)
	target := fs.String("target", "", "the address to forward to (host:port; required)")
	seedFlag := fs.String("seed", "", "the schedule's seed (default: RINGCAST_FAULT_SEED, else a fresh one)")
	var s faultproxy.Schedule
	fs.DurationVar(&s.Every, "every", 150*time.Millisecond, "mean pause between two faults")
	fs.DurationVar(&s.MaxStall, "max-stall", 300*time.Millisecond, "longest stall")
	fs.DurationVar(&s.MaxSlow, "max-slow", 300*time.Millisecond, "longest slowdown")
	fs.DurationVar(&s.MaxDelay, "max-delay", 2*time.Millisecond, "longest per-chunk delay of a slowdown")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *target == "" || fs.NArg() > 0 {
		return errors.New("usage: faultproxy --target host:port [--seed N] [--every d] [--max-stall d] [--max-slow d] [--max-delay d]")
	}
	if s.Every <= 0 || s.MaxStall <= 0 || s.MaxSlow <= 0 || s.MaxDelay <= 0 {
		return errors.New("--every, --max-stall, --max-slow and --max-delay must be positive")
	}
	seed := uint64(time.Now().UnixNano())
	for _, v := range []string{*seedFlag, os.Getenv("RINGCAST_FAULT_SEED")} {
		if v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("seed %q: want a decimal uint64", v)
			}
			seed = n
			break
		}
	}
	p, err := faultproxy.Start(*target)
	if err != nil {
		return err
	}
	defer p.Close()

	say := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	say("addr=%s seed=%d", p.Addr(), seed)

	var injected []faultproxy.Fault
	// inject injects the schedule's next n faults, each after its pause,
	// and reports false when ctx ends first.
	inject := func(n int) bool {
		// Schedule.Faults draws one sequence per seed: its first len+n
		// faults start with the len already injected.
		for _, f := range s.Faults(seed, len(injected)+n)[len(injected):] {
			t := time.NewTimer(f.After)
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case <-t.C:
			}
			p.Inject(f)
			injected = append(injected, f)
		}
		return true
	}
	lines := make(chan string)
	go func() { // ends with stdin; never waited for (stdin may stay open past a signal)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
loop:
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			break loop
		case line, ok = <-lines:
			if !ok {
				break loop
			}
		}
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "faults":
			n, err := strconv.Atoi(arg)
			if err != nil || n <= 0 || n > maxFaults {
				say("error faults %q: want a count from 1 to %d", arg, maxFaults)
				continue
			}
			from := len(injected)
			if !inject(n) {
				say("error faults %d: interrupted after %d", n, len(injected)-from)
				break loop
			}
			say("ok faults %d", n)
		case "cut":
			say("ok cut %d", p.Cut())
		case "resume":
			p.Resume()
			say("ok resume")
		case "":
		default:
			say("error unknown command %q (want faults <count>, cut or resume)", cmd)
		}
	}
	for _, f := range injected {
		say("fault %v", f)
	}
	st := p.Stats()
	say("stats conns=%d cuts=%d stalls=%d slows=%d mid-frame-cuts=%d faults=%d", st.Conns, st.Cuts, st.Stalls, st.Slows, st.MidFrameCuts, st.Faults())
	return nil
}
