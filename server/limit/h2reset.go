package limit

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// H2Reset names the HTTP/2 rapid-reset limit.
const H2Reset = "h2_reset"

// h2Preface is the HTTP/2 client preface: what an HTTP/2 client sends first.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// errEnhanceYourCalm is what a watched connection's Read returns once the
// client has reset too many streams: the HTTP/2 server (golang.org/x/net/
// http2) answers a ConnectionError read from its connection with GOAWAY
// carrying that code, and closes the connection.
var errEnhanceYourCalm = http2.ConnectionError(http2.ErrCodeEnhanceYourCalm)

// ResetGuard cuts HTTP/2 connections that reset streams faster than a
// bound (a rapid reset: opening streams and cancelling them at once costs
// the server work the client never waits for) and, for a penalty period,
// refuses new connections from the client that did it, since such a
// client redials at once. A client here is its remote IP: connections
// carry no token, and an IPv6 client is its /64 (one host commonly holds
// a whole /64, and could otherwise dodge its penalty by changing
// address). Cuts and refusals are counted and logged as H2Reset.
//
// At most maxPenalised clients serve a penalty at once: past that, a
// connection over the bound is still cut but its client is not refused
// afterwards (an attacker with that many addresses is not slowed by one
// more refusal, and the guard's memory stays bounded).
type ResetGuard struct {
	l       *Limiter
	rate    float64       // RST_STREAM frames per second per connection, and the bucket's size
	penalty time.Duration // <= 0: none
	mu      sync.Mutex
	until   map[string]time.Time // client → end of its penalty
	held    map[string]heldConn  // client → the one connection held unserved until its penalty ends
	closed  bool                 // the listener closed: hold nothing more
}

// heldConn is a connection held unserved, and the timer that closes it
// when its client's penalty ends.
type heldConn struct {
	c     net.Conn
	timer *time.Timer
}

// maxPenalised bounds the clients serving a penalty at once, and
// prunePerTrip how many penalties each cut checks for expiry, so a cut's
// work under the lock is bounded however many clients are penalised.
const (
	maxPenalised = 1 << 16
	prunePerTrip = 8
)

// ResetGuard returns a guard allowing each HTTP/2 connection rate
// RST_STREAM frames per second (a bucket of as many) and refusing a client
// for penalty after one of its connections went over. rate < 0: nil, no
// guard (its methods then pass everything through). penalty <= 0: none,
// a connection over the bound is cut and its client may reconnect at once.
func (l *Limiter) ResetGuard(rate float64, penalty time.Duration) *ResetGuard {
	if rate < 0 {
		return nil
	}
	return &ResetGuard{l: l, rate: rate, penalty: penalty, until: make(map[string]time.Time), held: make(map[string]heldConn)}
}

// clientOf is c's client: "ip:" and its remote IPv4 address, or the /64
// holding its IPv6 address.
func clientOf(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		host = c.RemoteAddr().String()
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() && !ip.Is4In6() {
		if p, err := ip.WithZone("").Prefix(64); err == nil {
			return "ip:" + p.String()
		}
	}
	return "ip:" + host
}

// refused decides a new connection from a client serving a penalty: the
// first is held, unserved and unread, until the penalty ends (a client
// that redials at once then waits on it instead of opening connection
// after connection); any other is closed at once. Both are counted and
// logged. It reports whether c was taken.
func (g *ResetGuard) refused(c net.Conn) bool {
	id := clientOf(c)
	now := g.l.now()
	g.mu.Lock()
	end, ok := g.until[id]
	if ok && !now.Before(end) {
		delete(g.until, id)
		ok = false
	}
	_, busy := g.held[id]
	hold := ok && !busy && !g.closed
	if hold {
		g.held[id] = heldConn{c: c, timer: time.AfterFunc(end.Sub(now), func() { g.release(id, c) })}
	}
	g.mu.Unlock()
	if !ok {
		return false
	}
	// Counted before the client can see the close.
	g.refuse(id, now, fmt.Sprintf("connection refused: this client reset HTTP/2 streams faster than %g/s (max-h2-resets) and is refused until %s (h2-reset-penalty)", g.rate, end.UTC().Format(time.RFC3339)))
	if !hold {
		_ = c.Close()
	}
	return true
}

// release closes c, held for id, unless the listener's Close did.
func (g *ResetGuard) release(id string, c net.Conn) {
	g.mu.Lock()
	if h, ok := g.held[id]; ok && h.c == c {
		delete(g.held, id)
	}
	g.mu.Unlock()
	_ = c.Close()
}

// penalised reports whether id is serving a penalty.
func (g *ResetGuard) penalised(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	end, ok := g.until[id]
	return ok && g.l.now().Before(end)
}

// trip starts id's penalty, if there is room for it, and counts and logs
// the cut.
func (g *ResetGuard) trip(id string) {
	now := g.l.now()
	penalised := false
	if g.penalty > 0 {
		g.mu.Lock()
		// Forget a few served penalties (map order is random, so
		// successive cuts check different ones): bounded work per cut.
		checked := 0
		for k, end := range g.until {
			if checked++; checked > prunePerTrip {
				break
			}
			if !now.Before(end) {
				delete(g.until, k)
			}
		}
		if _, ok := g.until[id]; ok || len(g.until) < maxPenalised {
			g.until[id] = now.Add(g.penalty)
			penalised = true
		}
		g.mu.Unlock()
	}
	msg := fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): it reset streams faster than %g/s (max-h2-resets); new connections from this client are refused for %v (h2-reset-penalty)", g.rate, g.penalty)
	switch {
	case g.penalty <= 0:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): it reset streams faster than %g/s (max-h2-resets); no penalty (h2-reset-penalty)", g.rate)
	case !penalised:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): it reset streams faster than %g/s (max-h2-resets); %d clients already serve a penalty, so this one is not refused", g.rate, maxPenalised)
	}
	g.refuse(id, now, msg)
}

func (g *ResetGuard) refuse(id string, now time.Time, msg string) {
	g.l.mu.Lock()
	defer g.l.mu.Unlock()
	g.l.refuse(id, g.l.get(id, now), now, &Error{Limit: H2Reset, msg: msg})
}

// Listener refuses, on accept, connections from a client serving a
// penalty (see refused). With watch, it also watches every connection it returns (see
// Watch): for h2c, whose HTTP/2 frames are the connection's bytes. Behind
// TLS the bytes are ciphertext; watch the decrypted connection instead.
func (g *ResetGuard) Listener(ln net.Listener, watch bool) net.Listener {
	if g == nil {
		return ln
	}
	return &guardListener{Listener: ln, g: g, watch: watch}
}

type guardListener struct {
	net.Listener
	g     *ResetGuard
	watch bool
}

func (ln *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ln.g.refused(c) {
			continue
		}
		if ln.watch {
			c = ln.g.Watch(c)
		}
		return c, nil
	}
}

// Close closes the listener and the connections it holds, and stops
// their timers.
func (ln *guardListener) Close() error {
	g := ln.g
	g.mu.Lock()
	g.closed = true
	held := g.held
	g.held = make(map[string]heldConn)
	g.mu.Unlock()
	for _, h := range held {
		h.timer.Stop()
		_ = h.c.Close()
	}
	return ln.Listener.Close()
}

// Watch returns c with its reads followed: if they begin with the HTTP/2
// client preface, each frame header is read as it passes and every
// RST_STREAM frame takes a token from the connection's bucket. Past the
// bound, the next Read fails with an HTTP/2 connection error
// ENHANCE_YOUR_CALM (the server then sends GOAWAY and closes) and the
// client's penalty starts. Other bytes (HTTP/1.1) pass untouched. The
// returned conn keeps c's TLS state, if it has one.
func (g *ResetGuard) Watch(c net.Conn) net.Conn {
	if g == nil {
		return c
	}
	w := &watchConn{Conn: c, g: g, tokens: g.rate}
	if tc, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return &watchTLSConn{watchConn: w, tc: tc}
	}
	return w
}

const (
	sniffing = iota // matching the preface
	framing         // following frames
	passing         // not HTTP/2: nothing to follow
	tripped         // over the bound: reads fail
)

type watchConn struct {
	net.Conn
	g      *ResetGuard
	state  int
	off    int     // preface bytes matched, or frame header bytes held
	hdr    [9]byte // the frame header being read
	skip   int     // payload bytes left of the current frame
	tokens float64
	refill time.Time
}

func (c *watchConn) Read(p []byte) (int, error) {
	if c.state == tripped {
		return 0, errEnhanceYourCalm
	}
	n, err := c.Conn.Read(p)
	if c.state != passing && n > 0 {
		c.follow(p[:n])
	}
	return n, err
}

// follow advances through b, the next bytes the client sent. Reads are
// sequential (one reader per connection), so no lock is needed.
func (c *watchConn) follow(b []byte) {
	for len(b) > 0 && c.state < passing {
		if c.state == sniffing {
			k := min(len(b), len(h2Preface)-c.off)
			if string(b[:k]) != h2Preface[c.off:c.off+k] {
				c.state = passing
				return
			}
			b, c.off = b[k:], c.off+k
			if c.off == len(h2Preface) {
				c.state, c.off = framing, 0
			}
			continue
		}
		if c.skip > 0 {
			k := min(len(b), c.skip)
			b, c.skip = b[k:], c.skip-k
			continue
		}
		k := copy(c.hdr[c.off:], b)
		b, c.off = b[k:], c.off+k
		if c.off < len(c.hdr) {
			return
		}
		c.off = 0
		c.skip = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		if c.hdr[3] == 0x3 && !c.allowReset() { // RST_STREAM
			c.state = tripped
			c.g.trip(clientOf(c.Conn))
		}
	}
}

// allowReset takes one token from the connection's bucket.
func (c *watchConn) allowReset() bool {
	now := c.g.l.now()
	if !c.refill.IsZero() {
		c.tokens = min(c.g.rate, c.tokens+now.Sub(c.refill).Seconds()*c.g.rate)
	}
	c.refill = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// watchTLSConn is a watched TLS connection: the HTTP/2 server reads its
// TLS state (Request.TLS, the TLS 1.2 minimum) through ConnectionState.
type watchTLSConn struct {
	*watchConn
	tc interface{ ConnectionState() tls.ConnectionState }
}

func (c *watchTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
