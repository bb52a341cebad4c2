// Package sse is ringcast's Server-Sent Events face: GET /events serves the
// same ring through hub.Subscribe as the Connect handler, framed for
// EventSource (docs/sse.md; the stream contract is docs/protocol.md).
//
// Every subscribe asks the hub for ON_UNSERVABLE_SNAPSHOT_INLINE, so a
// Last-Event-ID that cannot be resumed (too old, ahead, another epoch,
// malformed) becomes a gap event naming the reason, then the snapshot, caught-up and the
// live tail — always on an HTTP 200 response, because EventSource gives up
// for good on any other status and would otherwise loop on a refusal.
package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/face/offstack"
)

// Face is the face's name: the label its streams and refusals carry in
// metrics (hub.Request.Face, the edge's refusals).
const Face = "sse"

// Handler serves GET /events. Create it with New.
type Handler struct {
	hub *hub.Hub
	log *slog.Logger

	// Parking (WithParking): on when park is set.
	park bool
	// slots takes a stream's slot (WithStreamSlots); nil: none.
	slots func(http.ResponseWriter, *http.Request) (release func(), ok bool)
	// parked holds the sinks that took their connection over (Park)
	// until their End, for Close. (The hub counts them as streams until
	// their End has returned: hub.Hub.WaitStreams waits for them.)
	mu     sync.Mutex
	parked map[*sink]struct{}
}

// The `retry:` hint sent at the start of every response is drawn uniformly
// from [retryMin, retryMax], so that clients dropped together do not come
// back together.
const (
	retryMin = time.Second
	retryMax = 2 * time.Second
)

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithParking lets an HTTP/1.x stream wait without a goroutine (docs/sse.md,
// "Parked streams"): the first time it has nothing to send, its sink takes
// the connection over from the HTTP server and the handler returns; the
// stream then runs on one of the hub's workers only while it has something
// to do. A parked stream's writes go to the connection Hijack returns:
// the write timeout holds for them as long as that connection enforces it
// (the server's edge.WriteGuard does). Such streams outlive the HTTP
// server's Shutdown: the hub counts them until they end
// (hub.Hub.WaitStreams), and Close closes their connections.
func WithParking() Option {
	return func(h *Handler) { h.park = true }
}

// WithStreamSlots makes every stream hold a slot from open while it lasts,
// a parked one included: open answers a request it refuses itself and
// returns ok false (limit.Limiter.OpenSSE).
func WithStreamSlots(open func(http.ResponseWriter, *http.Request) (release func(), ok bool)) Option {
	return func(h *Handler) { h.slots = open }
}

// New returns the handler for h.
func New(h *hub.Hub, opts ...Option) *Handler {
	s := &Handler{
		hub:    h,
		log:    slog.New(slog.DiscardHandler),
		parked: make(map[*sink]struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// addParked and removeParked keep the set of parked streams' sinks.
func (s *Handler) addParked(sk *sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parked[sk] = struct{}{}
}

func (s *Handler) removeParked(sk *sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parked, sk)
}

// Close closes the connections of the parked streams: their writes fail
// and they end. A TLS connection is closed under its TLS layer (NetConn),
// which would otherwise try to say so to a client that may not be reading.
func (s *Handler) Close() {
	s.mu.Lock()
	conns := make([]net.Conn, 0, len(s.parked))
	for sk := range s.parked {
		if sk.conn != nil { // nil: still being taken over
			conns = append(conns, sk.conn)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		if nc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn, or a guarded connection
			c = nc.NetConn()
		}
		_ = c.Close()
	}
}

// ServeHTTP serves one stream until the client goes away or the hub ends
// it (lease, lapped, shutdown).
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	release := func() {}
	if s.slots != nil {
		var ok bool
		if release, ok = s.slots(w, r); !ok {
			return
		}
	}
	parked := false
	defer func() {
		if !parked {
			release()
		}
	}()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
		return
	}
	// The hub is handed the caller with its address
	// (hub.ContextWithPeer), and admits it through the edge.
	ctx := hub.ContextWithPeer(r.Context(), r.RemoteAddr)
	// Parsing and validating the query and writing the response headers
	// run deep call chains: off the stream's stack, which then stays small
	// for as long as the stream is open (package offstack).
	var req hub.Request
	var sk *sink
	if err := offstack.Run(func() error {
		var err error
		req, sk, err = s.start(ctx, w, r)
		return err
	}); err != nil {
		return
	}

	sk.h = s
	var hs hub.Sink = sk
	if s.park && r.ProtoMajor == 1 {
		sk.release = release
		hs = parkingSink{sk}
	}
	err := s.hub.Subscribe(ctx, req, hs)
	if err == hub.ErrParked {
		parked = true
		return // the stream goes on without this goroutine, and holds its slot; sk.End ends it
	}
	s.ended(sk, err, r.Context().Err() != nil)
}

// ended finishes a response after its stream ended with err: a token that
// expired is said so, so that the page can open a new EventSource with a
// fresh token and the last id it saw. An error is logged unless the client
// is known to have gone (its request's context ended).
func (s *Handler) ended(sk *sink, err error, clientGone bool) {
	if errors.Is(err, hub.ErrExpired) {
		sk.writeString("event: " + names.EventTokenExpired + "\ndata: {}\n\n")
		_ = sk.Flush()
		return
	}
	if err != nil && !clientGone {
		s.log.Debug("sse stream ended", "error", err)
	}
}

// errAnswered: start has answered the request itself (an error, or HEAD);
// there is no stream to serve.
var errAnswered = errors.New("sse: answered")

// start checks the request, writes the response headers and the retry
// hint, and returns the hub request and the stream's sink; errAnswered when
// it has answered the request instead. ctx is r's, naming its peer.
func (s *Handler) start(ctx context.Context, w http.ResponseWriter, r *http.Request) (hub.Request, *sink, error) {
	pq, err := parseQuery(r)
	req := pq.Request
	if err != nil {
		if s.log.Enabled(ctx, slog.LevelDebug) { // never higher: bad queries must not flood the log
			s.log.LogAttrs(ctx, slog.LevelDebug, "request refused", slog.String("refusal", "request"),
				slog.String("path", r.URL.Path), slog.String("client", s.hub.Client(ctx)), slog.String("error", err.Error()))
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return hub.Request{}, nil, errAnswered
	}
	// The stream is admitted by the edge (hub.Config.Admit) now, before
	// the response's status goes out, so that a refusal is answered with
	// its own: with auth on, a topic outside the token's grant is refused
	// and no topic means the grant (docs/security.md). Subscribe serves
	// the admitted request as admitted.
	req, err = s.hub.Admit(ctx, req)
	if err != nil {
		var refusal interface{ Refuse(http.ResponseWriter) }
		if errors.As(err, &refusal) {
			refusal.Refuse(w)
		} else {
			http.Error(w, err.Error(), http.StatusForbidden)
		}
		return hub.Request{}, nil, errAnswered
	}
	sk := newSink(w)

	// The header wins over the query: EventSource re-sends the URL it was
	// opened with on every reconnect, so lastEventId in the query is only
	// the starting point and the header is where the stream got to.
	lastID := r.Header.Get("Last-Event-ID")
	if lastID == "" {
		lastID = pq.QueryLastID
	} else {
		// So is since_time: a reconnect resumes where the stream got to.
		req.SinceTime = time.Time{}
	}
	if lastID != "" {
		epoch, seq, fp, perr := ParseLastEventID(lastID)
		req.Epoch, req.SinceSeq, req.SinceFingerprint, req.MalformedCursor = epoch, seq, fp, perr != nil
	}

	if !open(w, r) {
		return hub.Request{}, nil, errAnswered
	}
	sk.writeString(retryHint())
	if err := sk.Flush(); err != nil {
		return hub.Request{}, nil, err
	}
	return req, sk, nil
}

// open writes a stream's response headers and its 200 status, and reports
// whether a body follows (not for HEAD).
func open(w http.ResponseWriter, r *http.Request) bool {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	if r.ProtoMajor == 1 && r.ProtoAtLeast(1, 1) {
		// No chunked encoding on HTTP/1.1: the body ends when the
		// connection closes, as the SSE specification recommends. A batch
		// is then one write system call; chunked, net/http's 4 KiB
		// connection buffer split a batch larger than it into three (the
		// buffer filled with the chunk header, the rest, the chunk's end).
		hd.Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	return r.Method != http.MethodHead
}

// retryHint is the `retry:` line that starts every response.
func retryHint() string {
	retry := retryMin + rand.N(retryMax-retryMin+1)
	return "retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n\n"
}

// lineEnds turns what would end an SSE line into spaces.
var lineEnds = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// RetryLater answers a GET /events that the server cannot serve yet (it
// is starting) in a way EventSource follows: a 200 stream that carries
// the retry hint and why, as a comment, and ends at once, so that
// EventSource reconnects after the hint (1–2 s). Any other status would
// make it give up for good. The caller sets Retry-After for other clients.
func RetryLater(w http.ResponseWriter, r *http.Request, why string) {
	if !open(w, r) {
		return
	}
	_, _ = io.WriteString(w, retryHint()+": "+lineEnds.Replace(why)+"\n\n")
}

// queryParams are the query parameters /events takes, and whether each may
// repeat. Anything else is refused: a misspelt parameter would otherwise be
// ignored and the stream would silently carry every topic.
var queryParams = map[string]bool{
	"topic":          true,
	"snapshot":       false,
	"lastEventId":    false,
	"since_time":     false,
	names.TokenParam: false,
}

// query is a parsed /events query.
type query struct {
	hub.Request
	QueryLastID string // the lastEventId parameter
}

// parseQuery reads topic (repeatable), snapshot, lastEventId and
// since_time, and checks them against the proto's rules. A malformed query, an unknown or repeated
// parameter, or a bad value is a programming error in the page that built
// the URL, not a resume, so it is answered 400.
func parseQuery(r *http.Request) (query, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, fmt.Errorf("malformed query: %w", err)
	}
	for name, vs := range q {
		repeatable, known := queryParams[name]
		switch {
		case !known:
			return query{}, fmt.Errorf("unknown query parameter %s (known: topic, snapshot, lastEventId, since_time, %s)", strconv.Quote(name), names.TokenParam)
		case !repeatable && len(vs) > 1:
			return query{}, fmt.Errorf("query parameter %s given %d times", name, len(vs))
		}
	}
	m := &ringcastv1.SubscribeEventsRequest{
		Topics:       q["topic"],
		OnUnservable: ringcastv1.OnUnservable_ON_UNSERVABLE_SNAPSHOT_INLINE,
	}
	v := q.Get("snapshot")
	snap, ok := names.ParseSnapshot(v, false)
	if !ok {
		return query{}, fmt.Errorf("snapshot must be %s, not %s", names.SnapshotNames, strconv.Quote(v))
	}
	m.Snapshot = snap
	if v, ok := q["since_time"]; ok {
		// A "+" of an offset left unescaped in the URL reads as a space
		// (RFC 3339 has no spaces).
		t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(v[0], " ", "+"))
		if err != nil {
			return query{}, fmt.Errorf("since_time must be an RFC 3339 time such as 2026-12-01T09:00:00Z, not %s", strconv.Quote(v[0]))
		}
		if q.Get("lastEventId") != "" {
			return query{}, errors.New("since_time and lastEventId are two different starting points: give one")
		}
		m.SinceTime = timestamppb.New(t)
	}
	if err := protovalidate.Validate(m); err != nil {
		var verr *protovalidate.ValidationError
		if errors.As(err, &verr) && len(verr.Violations) > 0 {
			// "topics[2]: value does not match regex pattern ..." names
			// the proto field; the query parameter is "topic".
			msg := strings.Replace(verr.Violations[0].String(), "topics", "topic", 1)
			return query{}, fmt.Errorf("bad query: %s", msg)
		}
		return query{}, fmt.Errorf("bad query: %w", err)
	}
	req, err := hub.RequestFromProto(Face, m)
	if err != nil {
		return query{}, fmt.Errorf("bad query: %s", strings.TrimPrefix(err.Error(), hub.ErrInvalidRequest.Error()+": "))
	}
	return query{Request: req, QueryLastID: q.Get("lastEventId")}, nil
}
