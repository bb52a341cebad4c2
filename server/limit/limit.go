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
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
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

// Config sets the per-client limits. Zero fields take the defaults
// documented on them; negative ones disable their limit.
type Config struct {
	// MaxStreams is how many streams (SubscribeEvents and SSE) one
	// client may hold open at once. Default 64.
	MaxStreams int
	// PublishRate is the commits per second one client may publish on
	// average, and PublishBurst how many it may publish at once (the
	// bucket's size). Defaults 2,000 and 4,000: far above what a normal
	// publisher sends, far below what turns the ring over in a second.
	PublishRate  float64
	PublishBurst int
	// PublishByteRate is the bytes per second one client may publish on
	// average (the protobuf size of its Publish and PublishBatch
	// requests), and PublishByteBurst how many it may publish at once.
	// Defaults 1 MiB/s and 4 MiB (the default largest request): one
	// client alone takes about a minute to turn the default ring (256 MiB
	// of events and their cached encodings) over when every face caches
	// an encoding of each event, about four minutes when none does
	// (docs/limits.md). Negative rate: no bound.
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
	if c.MaxStreams == 0 {
		c.MaxStreams = 64
	}
	if c.PublishRate == 0 {
		c.PublishRate = 2000
	}
	if c.PublishBurst == 0 {
		c.PublishBurst = 4000
	}
	if c.PublishByteRate == 0 {
		c.PublishByteRate = DefaultPublishByteRate
	}
	if c.PublishByteBurst == 0 {
		c.PublishByteBurst = DefaultPublishByteBurst
	}
	if c.Observer == nil {
		c.Observer = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// The defaults of PublishByteRate and PublishByteBurst.
const (
	DefaultPublishByteRate  = 1 << 20
	DefaultPublishByteBurst = 4 << 20
)

// Error is a refusal: which limit, and when trying again makes sense.
type Error struct {
	Limit      string
	RetryAfter time.Duration
	msg        string
}

func (e *Error) Error() string { return e.msg }

// RetryAfterSeconds is the Retry-After header value: whole seconds, at
// least 1.
func (e *Error) RetryAfterSeconds() string { return RetryAfterValue(e.RetryAfter) }

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
	tokens  float64              // commits
	bytes   float64              // bytes
	refill  time.Time            // when tokens and bytes were last brought up to date
	logged  map[string]time.Time // last log line per limit
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
	c := l.byID[string(id)]
	if c == nil {
		c = &client{tokens: float64(l.cfg.PublishBurst), bytes: float64(l.cfg.PublishByteBurst), refill: now}
		l.byID[string(id)] = c
	}
	if l.calls++; l.calls >= 4096 {
		l.sweep(now)
	}
	return c
}

// sweep forgets clients with no stream open and a full bucket: they are
// indistinguishable from new ones. l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	l.calls = 0
	full := max(refillTime(float64(l.cfg.PublishBurst), l.cfg.PublishRate), refillTime(float64(l.cfg.PublishByteBurst), l.cfg.PublishByteRate))
	for id, c := range l.byID {
		if c.streams == 0 && now.Sub(c.refill) >= full && now.Sub(lastLog(c)) >= time.Minute {
			delete(l.byID, id)
		}
	}
}

// refillTime is how long a bucket of burst takes to fill from empty at
// rate (a negative rate: no bucket, 0).
func refillTime(burst, rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(burst / rate * float64(time.Second))
}

func lastLog(c *client) (t time.Time) {
	for _, at := range c.logged {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// refuse counts, logs (once per client and limit per minute) and returns
// a refusal. l.mu is held.
func (l *Limiter) refuse(id string, c *client, now time.Time, e *Error) *Error {
	l.cfg.Observer(e.Limit)
	if c.logged == nil {
		c.logged = make(map[string]time.Time)
	}
	if at, ok := c.logged[e.Limit]; !ok || now.Sub(at) >= time.Minute {
		c.logged[e.Limit] = now
		l.cfg.Logger.Warn("client over a limit; refusing (logged once a minute per client and limit)", "client", id, "limit", e.Limit, "error", e.msg)
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
	elapsed := now.Sub(c.refill).Seconds()
	c.refill = now
	// A request larger than a bucket passes once the bucket is full and
	// leaves it in debt, so the client's next requests wait it off;
	// asking for more than the bucket can hold would be refused for ever.
	var e *Error
	if byCount {
		burst := float64(l.cfg.PublishBurst)
		c.tokens = min(burst, c.tokens+elapsed*l.cfg.PublishRate)
		if need := min(float64(commits), burst); need > c.tokens {
			wait := time.Duration((need - c.tokens) / l.cfg.PublishRate * float64(time.Second))
			e = &Error{
				Limit:      Publish,
				RetryAfter: wait,
				msg:        fmt.Sprintf("publish rate over %g commits/s (burst %d) for this client (publish-rate); retry after %v", l.cfg.PublishRate, l.cfg.PublishBurst, wait.Round(time.Millisecond)),
			}
		}
	}
	if byBytes {
		burst := float64(l.cfg.PublishByteBurst)
		c.bytes = min(burst, c.bytes+elapsed*l.cfg.PublishByteRate)
		if need := min(float64(size), burst); need > c.bytes {
			wait := time.Duration((need - c.bytes) / l.cfg.PublishByteRate * float64(time.Second))
			if e == nil || wait > e.RetryAfter {
				e = &Error{
					Limit:      PublishBytes,
					RetryAfter: wait,
					msg:        fmt.Sprintf("publish rate over %g bytes/s (burst %d bytes) for this client (publish-byte-rate); retry after %v", l.cfg.PublishByteRate, l.cfg.PublishByteBurst, wait.Round(time.Millisecond)),
				}
			}
		}
	}
	if e != nil {
		return l.refuse(string(id), c, now, e)
	}
	if byCount {
		c.tokens -= float64(commits)
	}
	if byBytes {
		c.bytes -= float64(size)
	}
	return nil
}

// refuseConn counts a refused connection (see Listener) for metrics and
// logs: limit is Conns or ConnsPerClient.
func (l *Limiter) refuseConn(id, limit string, max int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := fmt.Sprintf("the server holds %d connections, the most allowed (max-conns)", max)
	if limit == ConnsPerClient {
		msg = fmt.Sprintf("this client holds %d connections, the most one client may (max-conns-per-client)", max)
	}
	l.refuse(id, l.get(id, now), now, &Error{Limit: limit, msg: msg})
}

// DefaultMaxConns is the default connection bound: 80% of the open-file
// limit, leaving the rest for the store, logs and the listener itself.
func DefaultMaxConns() int { return max(16, OpenFileLimit()*8/10) }
