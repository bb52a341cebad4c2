package limit

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// addrConn is a conn with only a remote address.
type addrConn struct {
	net.Conn
	addr string
}

func (c addrConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.ParseIP(c.addr), Port: 4000} }
func (c addrConn) Close() error         { return nil }

// TestResetGuardKeysIPv6ByPrefix: an IPv6 client is its /64, so rotating
// addresses inside it does not dodge a penalty; IPv4 clients are their
// address.
func TestResetGuardKeysIPv6ByPrefix(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:1:2:3"},
		{"2001:db8:1:2::1", "2001:db8:1:2::1"},
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
	} {
		if a, b := clientOf(addrConn{addr: tc.a}), clientOf(addrConn{addr: tc.b}); a != b {
			t.Errorf("%s is %q, %s is %q: want one client", tc.a, a, tc.b, b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.7", "192.0.2.8"},
	} {
		if a, b := clientOf(addrConn{addr: tc.a}), clientOf(addrConn{addr: tc.b}); a == b {
			t.Errorf("%s and %s are both %q: want two clients", tc.a, tc.b, a)
		}
	}
	l := New(Config{})
	g := l.ResetGuard(10, time.Hour)
	g.trip(clientOf(addrConn{addr: "2001:db8:1:2::1"}))
	g.trip(clientOf(addrConn{addr: "2001:db8:1:2::2"})) // cut again: a repeat offender
	if !g.refused(addrConn{addr: "2001:db8:1:2::99"}) {
		t.Fatal("another address of the cut client's /64 was served during its penalty")
	}
	ln := g.Listener(nil, false).(*guardListener)
	ln.Listener = closedListener{}
	_ = ln.Close()
}

type closedListener struct{ net.Listener }

func (closedListener) Close() error { return nil }

// TestResetGuardPenaltyOff: with a penalty <= 0 (--h2-reset-penalty
// negative), a cut is counted but its client is served again at once and
// nothing is remembered.
func TestResetGuardPenaltyOff(t *testing.T) {
	var counted []string
	l := New(Config{Observer: func(name string) { counted = append(counted, name) }})
	g := l.ResetGuard(10, -1)
	g.trip("ip:192.0.2.7")
	g.trip("ip:192.0.2.7")
	if g.refused(addrConn{addr: "192.0.2.7"}) || len(g.until) != 0 || len(g.cuts) != 0 {
		t.Fatalf("penalty off: refused, or %d penalties and %d cuts remembered", len(g.until), len(g.cuts))
	}
	if len(counted) != 2 || counted[0] != H2Reset {
		t.Fatalf("counted %v, want the cut", counted)
	}
}

// TestResetGuardBoundsItsState: served penalties are forgotten a few per
// cut, and past maxPenalised live ones a cut client is cut but not
// remembered; the listener's Close stops the timers of the connections it
// held.
func TestResetGuardBoundsItsState(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{})
	l.now = func() time.Time { return now }
	g := l.ResetGuard(10, time.Minute)
	for i := range maxPenalised {
		g.until[fmt.Sprintf("ip:old-%d", i)] = now
	}
	g.cuts["ip:192.0.2.1"] = now // cut once before: the next cut starts its penalty
	g.trip("ip:192.0.2.1")       // checks prunePerTrip of the served ones
	if n := len(g.until); n != maxPenalised-prunePerTrip+1 {
		t.Fatalf("%d penalties after a cut, want the %d checked forgotten", n, prunePerTrip)
	}
	for k := range g.until {
		g.until[k] = now.Add(time.Hour) // all live
	}
	for len(g.until) < maxPenalised {
		g.until[fmt.Sprintf("ip:live-%d", len(g.until))] = now.Add(time.Hour)
	}
	g.cuts["ip:192.0.2.2"] = now
	g.trip("ip:192.0.2.2")
	if len(g.until) != maxPenalised || g.penalised("ip:192.0.2.2") {
		t.Fatalf("%d penalties, client penalised %v: want the bound kept", len(g.until), g.penalised("ip:192.0.2.2"))
	}
	if !g.penalised("ip:192.0.2.1") {
		t.Fatal("a penalised client was forgotten")
	}

	if !g.refused(addrConn{addr: "192.0.2.1"}) {
		t.Fatal("a penalised client was served")
	}
	timer := g.held["ip:192.0.2.1"].timer
	ln := g.Listener(nil, false).(*guardListener)
	ln.Listener = closedListener{}
	_ = ln.Close()
	if timer.Stop() {
		t.Fatal("the held connection's timer still ran after the listener closed")
	}
}

// TestResetGuardPenalisesOnlyRepeatOffenders: a first cut costs only the
// connection (its client, and everyone behind its address, is served at
// once); a second cut within repeatWindow starts the penalty; a cut after
// the window is a first cut again. The remembered cuts are bounded.
func TestResetGuardPenalisesOnlyRepeatOffenders(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{})
	l.now = func() time.Time { return now }
	g := l.ResetGuard(10, 10*time.Second)
	g.trip("ip:192.0.2.7")
	if g.penalised("ip:192.0.2.7") {
		t.Fatal("a first cut started a penalty")
	}
	now = now.Add(repeatWindow - time.Second)
	g.trip("ip:192.0.2.7")
	if !g.penalised("ip:192.0.2.7") {
		t.Fatal("a second cut within the window started no penalty")
	}
	now = now.Add(10 * time.Second)
	if g.penalised("ip:192.0.2.7") {
		t.Fatal("the penalty outlived its time")
	}
	now = now.Add(repeatWindow)
	g.trip("ip:192.0.2.7")
	if g.penalised("ip:192.0.2.7") {
		t.Fatal("a cut long after the last one started a penalty")
	}

	for i := range maxPenalised {
		g.cuts[fmt.Sprintf("ip:old-%d", i)] = now.Add(-repeatWindow)
	}
	g.trip("ip:192.0.2.9")
	if n := len(g.cuts); n > maxPenalised {
		t.Fatalf("%d cuts remembered, want at most %d", n, maxPenalised)
	}
}
