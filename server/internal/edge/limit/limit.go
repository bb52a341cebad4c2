// Package limit bounds what one client may take of a ringcast server: open
// streams and a publish rate (token buckets of commits and of bytes), on
// every face. A client is auth.ClientID: the token's sub when auth is on,
// else the remote IP.
//
// Over a limit a request is refused with resource_exhausted and a
// Retry-After (refuse.go: HTTP 429 on the SSE face and on Connect unary
// calls, the Retry-After header or trailer on every protocol), logged once
// per client and limit per minute, and counted (Observer) by limit name.
package limit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ringcast/ringcast/server/internal/edge/retry"
	"github.com/ringcast/ringcast/server/internal/settings"
)

// The limit names, as ringcast_limit_rejections_total{limit} labels them.
const (
	Streams      = "streams_per_client"
	Publish      = "publish_rate"
	PublishBytes = "publish_byte_rate"
	Conns        = "conns"
	// ConnsPerClient is the bound on one client's share of the
	// connections (see Listener).
	ConnsPerClient = "conns_per_client"
)

// Names are every limit name, for metrics to pre-register.
var Names = []string{Streams, Publish, PublishBytes, Conns, ConnsPerClient, H2Reset}

// Config sets the per-client limits. Zero fields take their defaults, the
// rows of package settings named on them; negative ones disable their
// limit.
type Config struct {
	// MaxStreams is how many streams (SubscribeEvents and SSE) one
	// client may hold open at once. Default: settings.MaxStreamsPerClient.
	MaxStreams int
	// PublishRate is the commits per second one client may publish on
	// average, and PublishBurst how many it may publish at once (the
	// bucket's size). Defaults: settings.PublishRate and PublishBurst.
	PublishRate  float64
	PublishBurst int
	// PublishByteRate is the bytes per second one client may publish on
	// average (the protobuf size of its Publish and PublishBatch
	// requests), and PublishByteBurst how many it may publish at once.
	// Defaults: settings.PublishByteRate and PublishByteBurst. Negative
	// rate: no bound.
	PublishByteRate  float64
	PublishByteBurst int64
	// Observer counts rejections by limit name. Default: none.
	Observer func(limit string)
	// Logger receives one line per client and limit per minute while it
	// is refused. Default: discard.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.MaxStreams = settings.MaxStreamsPerClient.Or(c.MaxStreams)
	c.PublishRate = settings.PublishRate.Or(c.PublishRate)
	c.PublishBurst = settings.PublishBurst.Or(c.PublishBurst)
	if c.PublishByteRate == 0 {
		c.PublishByteRate = float64(settings.PublishByteRate.Default)
	}
	c.PublishByteBurst = settings.PublishByteBurst.Or(c.PublishByteBurst)
	if c.Observer == nil {
		c.Observer = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Error is a refusal: which limit, and when trying again makes sense.
type Error struct {
	Limit      string
	RetryAfter time.Duration
	msg        string
}

func (e *Error) Error() string { return e.msg }

// RetryAfterSeconds is the Retry-After header value: whole seconds, at
// least 1.
func (e *Error) RetryAfterSeconds() string { return retry.RetryAfterValue(e.RetryAfter) }

// AsError returns err's *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Limiter keeps every client's count of open streams and publish bucket.
// It is safe for concurrent use.
type Limiter struct {
	cfg   Config
	now   func() time.Time
	mu    sync.Mutex
	byID  map[string]*client
	calls int // since the last sweep
}

type client struct {
	streams int
	commits bucket               // commits
	bytes   bucket               // bytes
	refill  time.Time            // when commits and bytes were last brought up to date
	logged  map[string]time.Time // last log line per limit
}

// bucket is a token bucket: it holds up to burst tokens and refills at
// rate tokens a second (a negative rate: no bucket, never short).
type bucket struct {
	tokens, burst, rate float64
}

func newBucket(burst, rate float64) bucket { return bucket{tokens: burst, burst: burst, rate: rate} }

func (b *bucket) on() bool { return b.rate >= 0 }

// refillFor adds what elapsed seconds bring, up to burst.
func (b *bucket) refillFor(elapsed float64) {
	if b.on() {
		b.tokens = min(b.burst, b.tokens+elapsed*b.rate)
	}
}

// full reports whether the bucket holds its burst: a client whose buckets
// are full is indistinguishable from a new one.
func (b *bucket) full() bool { return !b.on() || b.tokens >= b.burst }

// short reports whether the bucket cannot give n tokens now, and how long
// until it can. A request larger than the bucket passes once the bucket is
// full and leaves it in debt, so the client's next requests wait it off;
// asking for more than the bucket can hold would be refused for ever.
func (b *bucket) short(n float64) (time.Duration, bool) {
	if need := min(n, b.burst); b.on() && need > b.tokens {
		return time.Duration((need - b.tokens) / b.rate * float64(time.Second)), true
	}
	return 0, false
}

// take takes n tokens (once short says they are there), possibly into
// debt.
func (b *bucket) take(n float64) {
	if b.on() {
		b.tokens -= n
	}
}

// New returns a Limiter for cfg.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg.WithDefaults(), now: time.Now, byID: make(map[string]*client)}
}

// get returns id's state, creating it with a full bucket. l.mu is held.
func (l *Limiter) get(id string, now time.Time) *client { return getClient(l, id, now) }

// getClient is get for an id held in a string or in bytes: looking a known
// client up by bytes allocates nothing. l.mu is held.
func getClient[ID ~string | ~[]byte](l *Limiter, id ID, now time.Time) *client {
	if l.calls++; l.calls >= 4096 {
		l.sweep(now) // first: it may forget id's client, which must not be handed out
	}
	c := l.byID[string(id)]
	if c == nil {
		c = &client{
			commits: newBucket(float64(l.cfg.PublishBurst), l.cfg.PublishRate),
			bytes:   newBucket(float64(l.cfg.PublishByteBurst), l.cfg.PublishByteRate),
			refill:  now,
		}
		l.byID[string(id)] = c
	}
	return c
}

// sweep forgets clients with no stream open and full buckets (refilled
// to now first: a bucket left in debt by a large request takes longer
// than a burst to refill): they are indistinguishable from new ones.
// l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	l.calls = 0
	for id, c := range l.byID {
		c.refillTo(now)
		if c.streams == 0 && c.commits.full() && c.bytes.full() && now.Sub(lastLog(c)) >= time.Minute {
			delete(l.byID, id)
		}
	}
}

// refillTo brings both buckets up to now.
func (c *client) refillTo(now time.Time) {
	if now.After(c.refill) {
		elapsed := now.Sub(c.refill).Seconds()
		c.commits.refillFor(elapsed)
		c.bytes.refillFor(elapsed)
		c.refill = now
	}
}

func lastLog(c *client) (t time.Time) {
	for _, at := range c.logged {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// refuse counts, logs and returns a refusal: at Warn once per client and
// limit per minute, every other refusal at Debug (refusal=limit, as
// package edge lists the refusal logs). l.mu is held.
func (l *Limiter) refuse(id string, c *client, now time.Time, e *Error) *Error {
	l.cfg.Observer(e.Limit)
	if c.logged == nil {
		c.logged = make(map[string]time.Time)
	}
	if at, ok := c.logged[e.Limit]; !ok || now.Sub(at) >= time.Minute {
		c.logged[e.Limit] = now
		l.cfg.Logger.Warn("client over a limit; refusing (logged once a minute per client and limit)", "client", id, "limit", e.Limit, "error", e.msg)
	} else if l.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		l.cfg.Logger.LogAttrs(context.Background(), slog.LevelDebug, "request refused", slog.String("refusal", "limit"),
			slog.String("client", id), slog.String("limit", e.Limit), slog.String("error", e.msg))
	}
	return e
}

// OpenStream reserves one of id's stream slots. Call release when the
// stream ends.
func (l *Limiter) OpenStream(id string) (release func(), err error) {
	if l.cfg.MaxStreams < 0 {
		return func() {}, nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.get(id, now)
	if c.streams >= l.cfg.MaxStreams {
		return nil, l.refuse(id, c, now, &Error{
			Limit:      Streams,
			RetryAfter: 5 * time.Second,
			msg:        fmt.Sprintf("this client already holds %d streams, the most allowed (max-streams-per-client); close one first", c.streams),
		})
	}
	c.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			c.streams--
			l.mu.Unlock()
		})
	}, nil
}

// AllowPublish takes commits commits and size bytes (the request's
// protobuf size) from id's buckets, or refuses them all and takes nothing.
func (l *Limiter) AllowPublish(id string, commits, size int) error {
	return allowPublish(l, id, commits, size)
}

// AllowPublishBytes is AllowPublish for an id held in bytes (see
// auth.AppendClientID): for a client the limiter knows, it allocates
// nothing.
func (l *Limiter) AllowPublishBytes(id []byte, commits, size int) error {
	return allowPublish(l, id, commits, size)
}

// CountsPublishBytes reports whether AllowPublish looks at its size
// argument, so that a caller need not compute it otherwise.
func (l *Limiter) CountsPublishBytes() bool { return l.cfg.PublishByteRate >= 0 }

func allowPublish[ID ~string | ~[]byte](l *Limiter, id ID, commits, size int) error {
	byCount, byBytes := l.cfg.PublishRate >= 0, l.cfg.PublishByteRate >= 0
	if !byCount && !byBytes {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := getClient(l, id, now)
	c.refillTo(now)
	var e *Error
	if wait, short := c.commits.short(float64(commits)); short {
		e = &Error{
			Limit:      Publish,
			RetryAfter: wait,
			msg:        fmt.Sprintf("publish rate over %g commits/s (burst %d) for this client (publish-rate); retry after %v", l.cfg.PublishRate, l.cfg.PublishBurst, wait.Round(time.Millisecond)),
		}
	}
	if wait, short := c.bytes.short(float64(size)); short && (e == nil || wait > e.RetryAfter) {
		e = &Error{
			Limit:      PublishBytes,
			RetryAfter: wait,
			msg:        fmt.Sprintf("publish rate over %g bytes/s (burst %d bytes) for this client (publish-byte-rate); retry after %v", l.cfg.PublishByteRate, l.cfg.PublishByteBurst, wait.Round(time.Millisecond)),
		}
	}
	if e != nil {
		return l.refuse(string(id), c, now, e)
	}
	c.commits.take(float64(commits))
	c.bytes.take(float64(size))
	return nil
}

// refuseConn counts a refused connection (see Listener) for metrics and
// logs, and returns the refusal's reason: limit is Conns or
// ConnsPerClient. The reason names the bound and how to raise it, so that
// a benchmark or a proxy that opens many connections from one address is
// not stopped without saying why; a side listener's (side) are fixed.
func (l *Limiter) refuseConn(id, limit string, max int, side bool) string {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var msg string
	switch {
	case side && limit == ConnsPerClient:
		msg = fmt.Sprintf("this client (%s) holds %d connections to this side listener, the most one client may (a fixed bound of --metrics-addr and --pprof-addr)", id, max)
	case side:
		msg = fmt.Sprintf("this side listener holds %d connections, the most it allows (a fixed bound of --metrics-addr and --pprof-addr)", max)
	case limit == ConnsPerClient:
		msg = fmt.Sprintf("this client (%s) holds %d connections, the most one client may (--max-conns-per-client, by default a quarter of --max-conns): "+
			"raise it, or set -1 for no bound, when many connections come from one address (a load generator, a proxy)", id, max)
	default:
		msg = fmt.Sprintf("the server holds %d connections, the most it allows (--max-conns, by default 80%% of the open-file limit, %d here): "+
			"raise the open-file limit (ulimit -n; LimitNOFILE under systemd) and --max-conns", max, OpenFileLimit())
	}
	l.refuse(id, l.get(id, now), now, &Error{Limit: limit, msg: msg})
	return msg
}

// DefaultMaxConns is the default connection bound: 80% of the open-file
// limit, leaving the rest for the store, logs and the listener itself.
func DefaultMaxConns() int { return max(16, OpenFileLimit()*8/10) }
