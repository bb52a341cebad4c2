// Package faultproxy is a loopback TCP proxy for tests that injects the
// faults a real network does: it cuts connections, stalls them (one
// direction or both) for a while, slows them (a delay per chunk), and cuts
// a connection in the middle of a frame (half a chunk forwarded, then the
// close). Faults can be injected by hand or drawn from a seeded schedule
// (Run); Seed prints the seed of a failing test and reads it back from
// RINGCAST_FAULT_SEED to replay the same schedule.
package faultproxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Direction selects which way a fault applies.
type Direction uint8

// Directions: client→server (Up), server→client (Down), or both.
const (
	Up Direction = 1 << iota
	Down
	Both = Up | Down
)

func (d Direction) String() string {
	switch d {
	case Up:
		return "up"
	case Down:
		return "down"
	case Both:
		return "both"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// Proxy forwards every connection it accepts to its target.
type Proxy struct {
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu          sync.Mutex
	target      string
	pairs       map[*pair]struct{}
	stallUntil  [2]time.Time // per direction: forwarding waits until then
	slowUntil   time.Time
	slowDelay   time.Duration
	cutMidFrame bool          // the next server→client chunk is split and the pair cut
	resumed     chan struct{} // closed (and replaced) by Resume
	stats       Stats
}

// Stats counts what a proxy did.
type Stats struct {
	Conns, Cuts, Stalls, Slows, MidFrameCuts int
}

// Faults is the number of faults injected.
func (s Stats) Faults() int { return s.Cuts + s.Stalls + s.Slows + s.MidFrameCuts }

func (s Stats) String() string {
	return fmt.Sprintf("%d connections; faults: %d cuts, %d stalls, %d slowdowns, %d mid-frame cuts", s.Conns, s.Cuts, s.Stalls, s.Slows, s.MidFrameCuts)
}

type pair struct{ down, up net.Conn }

func (p *pair) close() {
	p.down.Close()
	p.up.Close()
}

// Start listens on 127.0.0.1:0 and forwards to target ("host:port").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, done: make(chan struct{}), pairs: map[*pair]struct{}{}, resumed: make(chan struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// New starts a proxy to target that closes when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address; URL its http:// base URL.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// SetTarget points new connections at another address (a restarted server).
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops accepting, cuts every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.pairs {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Cut closes every live connection and reports how many it cut.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.pairs {
		c.close()
	}
	p.stats.Cuts++
	return len(p.pairs)
}

// Stall holds forwarding in dir for d: bytes stay where they are (in the
// kernel buffers and the proxy) and flow again afterwards, as through a
// congested or briefly partitioned link.
func (p *Proxy) Stall(dir Direction, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	for i, bit := range []Direction{Up, Down} {
		if dir&bit != 0 && until.After(p.stallUntil[i]) {
			p.stallUntil[i] = until
		}
	}
	p.stats.Stalls++
}

// Slow delays every chunk forwarded, either way, by delay for the next d.
func (p *Proxy) Slow(delay, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slowDelay, p.slowUntil = delay, time.Now().Add(d)
	p.stats.Slows++
}

// Resume ends stalls and slowdowns now.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stallUntil = [2]time.Time{}
	p.slowUntil = time.Time{}
	close(p.resumed)
	p.resumed = make(chan struct{})
}

// CutMidFrame makes the next chunk the server sends be forwarded only in
// part (its first half) before the connection is
// cut: the client sees a frame that starts and never ends.
func (p *Proxy) CutMidFrame() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutMidFrame = true
	p.stats.MidFrameCuts++
}

func (p *Proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			down.Close()
			continue
		}
		c := &pair{down: down, up: up}
		p.mu.Lock()
		p.pairs[c] = struct{}{}
		p.stats.Conns++
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, Up) })
		p.wg.Go(func() { p.pipe(c, Down) })
	}
}

// pipe forwards one direction of c chunk by chunk, applying the faults in
// force; when either side fails it closes both.
func (p *Proxy) pipe(c *pair, dir Direction) {
	src, dst, i := c.down, c.up, 0
	if dir == Down {
		src, dst, i = c.up, c.down, 1
	}
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.pairs, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if !p.waitStall(i) {
				return
			}
			p.mu.Lock()
			var slow time.Duration
			if time.Now().Before(p.slowUntil) {
				slow = p.slowDelay
			}
			resumed := p.resumed
			split := dir == Down && p.cutMidFrame
			if split {
				p.cutMidFrame = false
			}
			p.mu.Unlock()
			if !p.sleep(slow, resumed) {
				return
			}
			if split {
				_, _ = dst.Write(chunk[:n/2]) // never the whole chunk
				return
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitStall waits while direction i is stalled; false: the proxy closed.
func (p *Proxy) waitStall(i int) bool {
	for {
		p.mu.Lock()
		d, resumed := time.Until(p.stallUntil[i]), p.resumed
		p.mu.Unlock()
		if d <= 0 {
			return true
		}
		if !p.sleep(d, resumed) {
			return false
		}
	}
}

// sleep waits d, or less when resumed closes or the proxy closes (then it
// reports false).
func (p *Proxy) sleep(d time.Duration, resumed <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-resumed:
		return true
	case <-p.done:
		return false
	}
}

// Seed returns the seed of a test's fault schedule: RINGCAST_FAULT_SEED
// when set (to replay a failure), else a fresh one. When the test fails,
// the seed is logged with the line that replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RINGCAST_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RINGCAST_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("fault schedule seed %d; replay: RINGCAST_FAULT_SEED=%d go test -run '^%s$' …", seed, seed, t.Name())
		}
	})
	return seed
}

// Schedule is a random fault schedule drawn from a seed: the same seed
// gives the same sequence of faults and pauses.
type Schedule struct {
	// Every is the mean pause between two faults (uniform in [Every/2, 3·Every/2]).
	Every time.Duration
	// MaxStall bounds a stall; MaxSlow bounds a slowdown's length and
	// MaxDelay its per-chunk delay.
	MaxStall, MaxSlow, MaxDelay time.Duration
}

// Fault is one step of a schedule.
type Fault struct {
	Kind  string // "cut", "stall", "slow" or "cut-mid-frame"
	Dir   Direction
	For   time.Duration // stall or slowdown length
	Delay time.Duration // slowdown per-chunk delay
	After time.Duration // pause before it
}

func (f Fault) String() string {
	switch f.Kind {
	case "stall":
		return fmt.Sprintf("+%v stall %v for %v", f.After, f.Dir, f.For)
	case "slow":
		return fmt.Sprintf("+%v slow %v/chunk for %v", f.After, f.Delay, f.For)
	}
	return fmt.Sprintf("+%v %s", f.After, f.Kind)
}

// Faults draws the first n faults of the schedule for seed.
func (s Schedule) Faults(seed uint64, n int) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x6661756c74))
	dur := func(hi time.Duration) time.Duration { return time.Duration(1 + rng.Int64N(max(int64(hi), 1))) }
	out := make([]Fault, n)
	for i := range out {
		f := Fault{After: s.Every/2 + time.Duration(rng.Int64N(max(int64(s.Every), 1)))}
		switch rng.IntN(4) {
		case 0:
			f.Kind = "cut"
		case 1:
			f.Kind, f.Dir, f.For = "stall", Direction(1+rng.IntN(3)), dur(s.MaxStall)
		case 2:
			f.Kind, f.For, f.Delay = "slow", dur(s.MaxSlow), dur(s.MaxDelay)
		case 3:
			f.Kind = "cut-mid-frame"
		}
		out[i] = f
	}
	return out
}

// Run injects the schedule's faults for seed, one after another, until ctx
// is done, and returns the faults it injected.
func (p *Proxy) Run(ctx context.Context, s Schedule, seed uint64) []Fault {
	var done []Fault
	for {
		// Draw in blocks; the schedule is a pure function of the seed.
		for _, f := range s.Faults(seed+uint64(len(done)), 64) {
			t := time.NewTimer(f.After)
			select {
			case <-ctx.Done():
				t.Stop()
				return done
			case <-t.C:
			}
			p.Inject(f)
			done = append(done, f)
		}
	}
}

// Inject applies one fault now.
func (p *Proxy) Inject(f Fault) {
	switch f.Kind {
	case "cut":
		p.Cut()
	case "stall":
		p.Stall(f.Dir, f.For)
	case "slow":
		p.Slow(f.Delay, f.For)
	case "cut-mid-frame":
		p.CutMidFrame()
	}
}
