package limit

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
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

// ResetGuard cuts HTTP/2 connections on which streams are reset faster
// than a bound (a rapid reset: opening streams and cancelling them at once
// costs the server work the client never waits for). Every reset counts,
// whoever sends it: RST_STREAM frames the client sends, and those the
// server sends in answer to the client's frames (a stream error the client
// provoked, such as WINDOW_UPDATE of 0, a stream depending on itself, or a
// stream opened past the limit), which cost the server as much.
//
// A client cut again within repeatWindow of its last cut is, for a penalty
// period, refused new connections, since such a client redials at once. A
// first cut costs only the connection: a client here is its remote IP
// (connections carry no token; an IPv6 client is its /64, since one host
// commonly holds a whole /64 and could otherwise dodge its penalty by
// changing address), and a penalty refuses everyone behind that address.
// Cuts and refusals are counted and logged as H2Reset.
//
// At most maxPenalised clients serve a penalty, and as many are remembered
// for a first cut, at once: past that, a connection over the bound is
// still cut but its client is not refused afterwards (an attacker with
// that many addresses is not slowed by one more refusal, and the guard's
// memory stays bounded).
type ResetGuard struct {
	l       *Limiter
	rate    float64       // RST_STREAM frames per second per connection, and the bucket's size
	penalty time.Duration // <= 0: none
	mu      sync.Mutex
	until   map[string]time.Time // client → end of its penalty
	cuts    map[string]time.Time // client → its last cut, while within repeatWindow
	held    map[string]heldConn  // client → the one connection held unserved until its penalty ends
	closed  bool                 // the listener closed: hold nothing more
}

// repeatWindow is how soon after a cut another cut of the same client
// starts its penalty.
const repeatWindow = time.Minute

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
// RST_STREAM frames per second, sent or received (a bucket of as many),
// and refusing a client for penalty when a connection of its goes over
// within repeatWindow of its last cut. rate < 0: nil, no
// guard (its methods then pass everything through). penalty <= 0: none,
// a connection over the bound is cut and its client may reconnect at once.
func (l *Limiter) ResetGuard(rate float64, penalty time.Duration) *ResetGuard {
	if rate < 0 {
		return nil
	}
	return &ResetGuard{l: l, rate: rate, penalty: penalty, until: make(map[string]time.Time), cuts: make(map[string]time.Time), held: make(map[string]heldConn)}
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

// trip counts and logs the cut of one of id's connections and, if id was
// cut within repeatWindow before (and there is room), starts its penalty.
func (g *ResetGuard) trip(id string) {
	now := g.l.now()
	penalised, repeat := false, false
	if g.penalty > 0 {
		g.mu.Lock()
		// Forget a few served penalties and old cuts (map order is
		// random, so successive cuts check different ones): bounded
		// work per cut.
		prune(g.until, func(end time.Time) bool { return !now.Before(end) })
		prune(g.cuts, func(at time.Time) bool { return now.Sub(at) >= repeatWindow })
		last, ok := g.cuts[id]
		repeat = ok && now.Sub(last) < repeatWindow
		if repeat {
			if _, ok := g.until[id]; ok || len(g.until) < maxPenalised {
				g.until[id] = now.Add(g.penalty)
				penalised = true
			}
		}
		if ok || len(g.cuts) < maxPenalised {
			g.cuts[id] = now
		}
		g.mu.Unlock()
	}
	var msg string
	switch {
	case g.penalty <= 0:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): streams on it were reset faster than %g/s (max-h2-resets); no penalty (h2-reset-penalty)", g.rate)
	case !repeat:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): streams on it were reset faster than %g/s (max-h2-resets); a first cut costs only the connection, another within %v refuses this client's new connections for %v (h2-reset-penalty)", g.rate, repeatWindow, g.penalty)
	case penalised:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): streams on it were reset faster than %g/s (max-h2-resets), again within %v; new connections from this client are refused for %v (h2-reset-penalty)", g.rate, repeatWindow, g.penalty)
	default:
		msg = fmt.Sprintf("HTTP/2 connection sent GOAWAY (ENHANCE_YOUR_CALM): streams on it were reset faster than %g/s (max-h2-resets), again; %d clients already serve a penalty, so this one is not refused", g.rate, maxPenalised)
	}
	g.refuse(id, now, msg)
}

// prune forgets up to prunePerTrip entries of m that done reports over.
func prune(m map[string]time.Time, done func(time.Time) bool) {
	checked := 0
	for k, at := range m {
		if checked++; checked > prunePerTrip {
			break
		}
		if done(at) {
			delete(m, k)
		}
	}
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

// Watch returns c with its frames followed: if its reads begin with the
// HTTP/2 client preface, each frame header read or written is followed as
// it passes (only the 9-byte headers, however reads and writes split
// them), and every RST_STREAM frame, the client's or the server's, takes a
// token from the connection's bucket. Past the bound, reads fail with an
// HTTP/2 connection error ENHANCE_YOUR_CALM (the server then sends GOAWAY
// and closes; a read already waiting is woken by a past read deadline),
// and the client's cut is counted (see trip). Other bytes (HTTP/1.1) pass
// untouched. The returned conn keeps c's TLS state, if it has one.
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

// Unwatched returns the connection beneath c when c is a watched
// connection that turned out not to be HTTP/2 (its bytes pass untouched):
// a connection the HTTP/1 server hands over (Hijack) then holds nothing
// of the watch for as long as it stays open. Otherwise it returns c.
func Unwatched(c net.Conn) net.Conn {
	if w, ok := c.(*watchConn); ok && w.state.Load() == passing {
		return w.Conn
	}
	return c
}

const (
	sniffing = iota // matching the preface
	framing         // following frames
	passing         // not HTTP/2: nothing to follow
	tripped         // over the bound: reads fail
)

type watchConn struct {
	net.Conn
	g *ResetGuard
	// state is set by the reader (sniffing, framing, passing) and by
	// whichever side goes over the bound (tripped); the writer reads it.
	state atomic.Int32
	in    frameFollower // the client's frames; the reader's alone
	out   frameFollower // the server's frames; writes are sequential
	mu    sync.Mutex    // guards the bucket, shared by reader and writer
	off   int           // preface bytes matched
	// tokens and refill are the bucket.
	tokens float64
	refill time.Time
}

// frameFollower follows frame headers through a byte stream.
type frameFollower struct {
	off  int     // frame header bytes held
	hdr  [9]byte // the frame header being read
	skip int     // payload bytes left of the current frame
}

// next advances through b and returns how many RST_STREAM frame headers
// it completed.
func (f *frameFollower) next(b []byte) (resets int) {
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(len(b), f.skip)
			b, f.skip = b[k:], f.skip-k
			continue
		}
		k := copy(f.hdr[f.off:], b)
		b, f.off = b[k:], f.off+k
		if f.off < len(f.hdr) {
			return resets
		}
		f.off = 0
		f.skip = int(f.hdr[0])<<16 | int(f.hdr[1])<<8 | int(f.hdr[2])
		if f.hdr[3] == 0x3 { // RST_STREAM
			resets++
		}
	}
	return resets
}

func (c *watchConn) Read(p []byte) (int, error) {
	if c.state.Load() == tripped {
		return 0, errEnhanceYourCalm
	}
	n, err := c.Conn.Read(p)
	if st := c.state.Load(); st == tripped {
		return 0, errEnhanceYourCalm
	} else if st < passing && n > 0 {
		c.follow(p[:n])
	}
	return n, err
}

// Write follows the server's frames once the connection is HTTP/2 (or
// may be: behind TLS the server writes its SETTINGS before reading the
// preface), from its first byte.
func (c *watchConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 && c.state.Load() < passing {
		if resets := c.out.next(p[:n]); resets > 0 && c.state.Load() == framing {
			c.take(resets)
		}
	}
	return n, err
}

// follow advances through b, the next bytes the client sent. Reads are
// sequential (one reader per connection).
func (c *watchConn) follow(b []byte) {
	if c.state.Load() == sniffing {
		k := min(len(b), len(h2Preface)-c.off)
		if string(b[:k]) != h2Preface[c.off:c.off+k] {
			c.state.CompareAndSwap(sniffing, passing)
			return
		}
		b, c.off = b[k:], c.off+k
		if c.off < len(h2Preface) {
			return
		}
		c.state.CompareAndSwap(sniffing, framing)
	}
	if resets := c.in.next(b); resets > 0 {
		c.take(resets)
	}
}

// take takes n tokens from the connection's bucket, one at a time; past
// the bound the connection trips, once.
func (c *watchConn) take(n int) {
	c.mu.Lock()
	over := false
	for range n {
		if !c.allowReset() {
			over = true
			break
		}
	}
	c.mu.Unlock()
	if over && c.state.CompareAndSwap(framing, tripped) {
		c.g.trip(clientOf(c.Conn))
		// Wakes a read waiting for the client's next bytes: it then
		// fails with ENHANCE_YOUR_CALM.
		_ = c.Conn.SetReadDeadline(time.Now())
	}
}

// allowReset takes one token from the connection's bucket. c.mu is held.
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
