// Package hub is ringcast's ring and broadcast: it assigns every event its
// seq, keeps the last W events, and owns the whole stream contract of
// docs/protocol.md — replay, snapshots, the replay-to-live handoff, filters,
// progress, bounds, leases and resync decisions — for every face (Connect,
// gRPC, gRPC-Web, SSE).
//
// Publishing is O(1) whatever the number of subscribers and never waits for
// one: a publish appends to the ring and kicks the notifier goroutine, which
// wakes the subscribers that are waiting. Each subscriber reads the shared
// ring at its own position on its own goroutine (its stream's); events are
// immutable and shared, never copied per subscriber.
package hub

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/settings"
)

// ErrDraining is returned by Publish once the hub is draining or closed.
var ErrDraining = errors.New("hub: draining, not accepting publishes")

// ErrDedupeFull is returned by Publish for a new idempotency key while the
// dedupe table is full of keys still inside their window: appending the
// commit without remembering its key would break the key's promise (a
// retry would be appended again), so the publish is refused instead.
var ErrDedupeFull = errors.New("hub: every remembered idempotency key is still inside the dedupe window; retry later")

// ErrTooManyKeys is returned by PublishBatch for a batch of more new
// idempotency keys than one client may hold in the dedupe table (or than
// the table holds): no wait would make room for them, so the batch is
// refused as it is and must be split.
var ErrTooManyKeys = errors.New("hub: too many new idempotency keys in one batch")

// Config configures a Hub. Zero fields take their defaults, applied once
// by WithDefaults: a numeric field's is its row of package settings (named
// on the field), the one table of the server's defaults and bounds.
type Config struct {
	// Window is W, the number of positioned events retained. Default:
	// settings.Window.
	Window int
	// Heartbeat is the idle interval after which a stream receives a
	// Heartbeat (or a pending Progress). Default: settings.Heartbeat.
	Heartbeat time.Duration
	// Lease is the longest a stream lives before it ends (OK), jittered by
	// ±LeaseJitter. Default: settings.Lease. Negative disables leases.
	Lease time.Duration
	// LeaseJitter is the relative lease jitter. Default 0.1 (±10%).
	LeaseJitter float64
	// MaxRingBytes bounds the ring's bytes (events' protobuf size plus
	// their cached encodings): past it the oldest events are dropped even
	// when fewer than Window are held. Default: settings.MaxRingBytes.
	MaxRingBytes int64
	// StateKeys bounds the latest-per-key table. Default:
	// settings.StateKeys.
	StateKeys int
	// MaxStateBytes bounds the bytes of the facts the latest-per-key table
	// holds (their protobuf size). Default: settings.MaxStateBytes.
	MaxStateBytes int64
	// MaxFactBytes is the largest fact Publish accepts (its protobuf
	// size). Default: settings.MaxFactBytes.
	MaxFactBytes int
	// MaxDataDepth is the deepest nesting of objects and arrays Publish
	// accepts in a fact's data (the data object is level 1).
	// Default: settings.MaxDataDepth.
	MaxDataDepth int
	// DedupeWindow is how long an idempotency key is remembered.
	// Default: settings.DedupeWindow.
	DedupeWindow time.Duration
	// DedupeKeys bounds the remembered idempotency keys. Default:
	// settings.DedupeKeys.
	DedupeKeys int
	// DedupeKeysPerClient bounds the remembered idempotency keys of one
	// client (the caller's, see Admitter.Client), so that
	// no client can fill the table and have every other client's new
	// keys refused. 0: half of DedupeKeys (whatever DedupeKeys is set
	// to); negative: no share.
	DedupeKeysPerClient int
	// Coalesce bounds how long a wake-up of waiting streams may be held
	// so that commits published meanwhile are delivered in one batch (one
	// write per subscriber instead of one per commit). A commit that finds
	// the streams idle wakes them at once; only while the server is busy
	// (streams still writing, or the CPUs saturated) is the next wake-up
	// held, up to Coalesce after the previous one (up to MaxHold under
	// sustained overload: see notify.go).
	// 0: always wake at once (serve's default is settings.Coalesce).
	Coalesce time.Duration
	// MaxRequestBytes bounds every request message; the RPC edge enforces
	// it and ServerStatus advertises it. Default: settings.MaxRequestBytes. The other request
	// limits ServerStatus advertises are the proto's validation rules
	// (see limits.go).
	MaxRequestBytes int
	// Version is reported in ServerStatus. Default "dev".
	Version string
	// Log is the durable store behind the ring (see Log). nil: memory,
	// the ring is the log.
	Log Log
	// Rebuild bounds how many of a Log's newest commits the hub reads at
	// start to fill the ring and the latest-per-key table. Default:
	// settings.StateRebuild (never less than Window).
	Rebuild int
	// Admit decides who may have what, on every face: every stream's
	// topics and end before it starts (Hub.Admit), every publish, the
	// caller's key space and client, and the outcomes it may read (see
	// Admitter). The edge's (edge.Admitter) applies the caller's token.
	// Default: none, every stream is served as asked and every publish
	// as given (its Publisher as set, every client "").
	Admit Admitter
	// Observer receives counts for metrics. Default: none.
	Observer Observer
	// Logger receives lifecycle logs. Default: discard.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default (the
// numeric ones are package settings').
func (c Config) WithDefaults() Config {
	c.Window = settings.Window.Or(c.Window)
	c.Heartbeat = settings.Heartbeat.Or(c.Heartbeat)
	c.Lease = settings.Lease.Or(c.Lease)
	if c.LeaseJitter <= 0 || c.LeaseJitter >= 1 {
		c.LeaseJitter = 0.1
	}
	c.MaxRingBytes = settings.MaxRingBytes.Or(c.MaxRingBytes)
	c.StateKeys = settings.StateKeys.Or(c.StateKeys)
	c.MaxStateBytes = settings.MaxStateBytes.Or(c.MaxStateBytes)
	c.MaxFactBytes = settings.MaxFactBytes.Or(c.MaxFactBytes)
	c.MaxDataDepth = settings.MaxDataDepth.Or(c.MaxDataDepth)
	c.DedupeWindow = settings.DedupeWindow.Or(c.DedupeWindow)
	c.DedupeKeys = settings.DedupeKeys.Or(c.DedupeKeys)
	c.MaxRequestBytes = settings.MaxRequestBytes.Or(c.MaxRequestBytes)
	if c.Rebuild <= 0 {
		c.Rebuild = settings.StateRebuild.Default
	}
	c.Rebuild = max(c.Rebuild, c.Window)
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every configuration error of c with its defaults
// applied, naming each setting by its name (window, max-ring-bytes, …),
// not its Go field: the name the serve command's flags and the docs give it.
// Each setting's bounds are its row's in package settings (Check, the one
// wording); the rules between settings are here. Lease and Coalesce are
// the embedder's beyond their rows (any lease; any coalesce window from 0
// up to the heartbeat): serve holds its flags to the rows.
func (c Config) Validate() error {
	c = c.WithDefaults()
	errs := []error{
		settings.Window.Check(c.Window),
		settings.Heartbeat.Check(c.Heartbeat),
		settings.Coalesce.CheckMin(c.Coalesce),
		settings.StateKeys.Check(c.StateKeys),
		settings.DedupeWindow.Check(c.DedupeWindow),
		settings.DedupeKeys.Check(c.DedupeKeys),
		settings.DedupeKeysPerClient.Check(c.DedupeKeysPerClient),
		settings.MaxRequestBytes.Check(c.MaxRequestBytes),
		settings.MaxFactBytes.Check(c.MaxFactBytes),
		settings.MaxDataDepth.Check(c.MaxDataDepth),
		settings.MaxRingBytes.Check(c.MaxRingBytes),
		settings.MaxStateBytes.Check(c.MaxStateBytes),
		settings.StateRebuild.Check(c.Rebuild),
	}
	if c.Coalesce > c.Heartbeat {
		errs = append(errs, settings.Exceeds(settings.Coalesce.Name, settings.Heartbeat.Name))
	}
	if c.DedupeKeysPerClient > c.DedupeKeys && c.DedupeKeys >= settings.DedupeKeys.Min {
		errs = append(errs, settings.Exceeds(settings.DedupeKeysPerClient.Name, settings.DedupeKeys.Name))
	}
	if c.MaxFactBytes > c.MaxRequestBytes {
		errs = append(errs, settings.Exceeds(settings.MaxFactBytes.Name, settings.MaxRequestBytes.Name))
	}
	if int64(c.MaxFactBytes) > c.MaxRingBytes {
		errs = append(errs, settings.Exceeds(settings.MaxFactBytes.Name, settings.MaxRingBytes.Name))
	}
	return errors.Join(errs...)
}

// Receipt is the answer to a publish.
type Receipt struct {
	Seq       uint64
	Epoch     uint64
	Time      time.Time
	Duplicate bool
}

// Hub is the ring and its broadcast. Create it with New; it is safe for
// concurrent use.
type Hub struct {
	cfg   Config
	epoch uint64 // random, non-zero, fixed for the hub's life; the Log's
	boot  time.Time
	log   Log // nil: memory store
	// backend is the store h serves from (memStore, logStore): every
	// behaviour that differs by store is its.
	backend store
	// store is the durable Log's retention (StoreLimits), reported in
	// ServerStatus; nil with the memory store or a Log that reports none.
	store *StoreLimits

	mu sync.RWMutex
	// Guarded by mu.
	ring   *ring
	state  ringcastv1.ServerState
	keys   *stateTable
	dedupe *dedupe
	latest *Event        // the latest status event (never nil after New)
	wake   chan struct{} // closed after head advanced, if taken (wakeNow); then replaced
	// wakeTaken is set when a reader takes wake (takeWake) and cleared when
	// wakeNow replaces it: while it is clear nobody holds the channel, so a
	// change needs no wake-up (see signal).
	wakeTaken atomic.Bool
	takers    atomic.Int32 // takes of wake since it was replaced, counted to just past directWakeTakers (signal's heuristic)
	lastWake  atomic.Int64 // when wake was last closed, in nanoseconds since monoStart: the notifier's hold counts from it
	kickedAt  atomic.Int64 // when the latest kick was sent, in nanoseconds since monoStart (see notify)
	// drainHead is the head when a hub with a Log started draining: its
	// streams end there (commits from other replicas keep arriving).
	drainHead uint64
	logFirst  uint64 // a Log's first seq when last asked
	ingested  int64  // bytes of the commits taken from a Log (guarded by mu): the rebuild logs its rate
	// own is an EchoLog's own commits taken out of order (own.go), guarded
	// by mu; heldHead is the ring's head as Intake.Held reads it without mu.
	own      ownCommits
	heldHead atomic.Uint64

	kick        chan struct{} // capacity 1: "head advanced", to the notifier
	done        chan struct{} // closed by Close: every stream ends
	closeOnce   sync.Once
	notifierWG  sync.WaitGroup
	subscribers atomic.Int64
	// noStreams is closed when subscribers falls to zero, for a
	// WaitStreams waiting (nil: none waits); guarded by noStreamsMu.
	noStreamsMu sync.Mutex
	noStreams   chan struct{}
	writing     atomic.Int64       // streams inside a batch write (the notifier's overload signal)
	stopFollow  context.CancelFunc // nil: memory store
	failed      chan error         // see Failed
	failOnce    sync.Once
	// dedupeRefused counts publishes refused with ErrDedupeFull.
	dedupeRefused atomic.Uint64
	// aheadWarned is when a cursor from the future was last logged (Unix
	// nanoseconds), aheadQuiet how many were not logged since (see ahead).
	aheadWarned atomic.Int64
	aheadQuiet  atomic.Uint64

	parkMu sync.Mutex
	parked []*stream // parked streams to resume at the next wake-up (park.go)
	runner runner    // resumes parked streams
}

// New validates cfg, mints an epoch, publishes the bind-time ServerStatus
// (seq 1) and starts the notifier. With a Log, the epoch is the Log's, the
// ring and the latest-per-key table are rebuilt from its newest commits
// (Rebuild), and New returns once the hub holds the Log's head. Call Close
// to stop it.
func New(cfg Config) (*Hub, error) { return NewContext(context.Background(), cfg) }

// NewContext is New that gives up its rebuild from a Log when ctx ends.
func NewContext(ctx context.Context, cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	h := &Hub{
		cfg:    cfg,
		boot:   time.Now(),
		log:    cfg.Log,
		state:  ringcastv1.ServerState_SERVER_STATE_SERVING,
		keys:   newStateTable(cfg.StateKeys, cfg.MaxStateBytes),
		dedupe: newDedupe(cfg.DedupeWindow, cfg.DedupeKeys, cfg.DedupeKeysPerClient),
		wake:   make(chan struct{}),
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		failed: make(chan error, 1),
	}
	h.backend = newStore(h)
	return h, h.backend.start(ctx)
}

// Epoch is the hub's instance epoch.
func (h *Hub) Epoch() uint64 { return h.epoch }

// Window is W.
func (h *Hub) Window() int { return h.cfg.Window }

// Subscribers is the number of open streams.
func (h *Hub) Subscribers() int64 { return h.subscribers.Load() }

// WaitStreams waits until no stream is open (each counted out as its
// Subscribe returns, or once its Parker's End has returned), or until ctx
// is done. It is the one count of streams shutdown waits on: every face's,
// a stream whose sink took its connection over from the HTTP server
// included. After Close no stream can start, so this is the end of every
// stream.
func (h *Hub) WaitStreams(ctx context.Context) error {
	h.noStreamsMu.Lock()
	if h.subscribers.Load() == 0 {
		h.noStreamsMu.Unlock()
		return nil
	}
	if h.noStreams == nil {
		h.noStreams = make(chan struct{})
	}
	none := h.noStreams
	h.noStreamsMu.Unlock()
	select {
	case <-none:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// streamEnded counts a stream out, and wakes WaitStreams at zero.
func (h *Hub) streamEnded() {
	if h.subscribers.Add(-1) != 0 {
		return
	}
	h.noStreamsMu.Lock()
	defer h.noStreamsMu.Unlock()
	if h.noStreams != nil {
		close(h.noStreams)
		h.noStreams = nil
	}
}

// Bounds returns the oldest and head seq: the servable range. With a Log,
// oldest is the Log's first seq (as last learnt, see refreshRange).
func (h *Hub) Bounds() (oldest, head uint64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.boundsLocked()
}

func (h *Hub) boundsLocked() (oldest, head uint64) { return h.backend.boundsLocked() }

// StateEvictions is how many keys the latest-per-key table has evicted.
func (h *Hub) StateEvictions() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.keys.evicted
}

// DedupeRefusals is how many publishes were refused with ErrDedupeFull.
func (h *Hub) DedupeRefusals() uint64 { return h.dedupeRefused.Load() }

// RingBytes is the bytes the ring holds now, cached encodings included.
func (h *Hub) RingBytes() int64 { return h.ring.bytes.Load() }

// StateBytes is the bytes of the facts the latest-per-key table holds.
func (h *Hub) StateBytes() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.keys.bytes
}

// Status describes the hub now (head, oldest and state are current).
func (h *Hub) Status() *ringcastv1.ServerStatus {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.statusLocked()
}

func (h *Hub) statusLocked() *ringcastv1.ServerStatus {
	oldest, head := h.boundsLocked()
	return &ringcastv1.ServerStatus{
		InstanceEpoch: h.epoch,
		BootTime:      timestamppb.New(h.boot),
		ServerVersion: h.cfg.Version,
		State:         h.state,
		Window:        uint32(h.cfg.Window),
		HeadSeq:       head,
		OldestSeq:     oldest,
		RingBytes:     uint64(max(h.ring.bytes.Load(), 0)),
		Limits: &ringcastv1.Limits{
			MaxFactsPerCommit: maxFactsPerCommit,
			MaxTopics:         maxTopics,
			MaxRequestBytes:   uint32(h.cfg.MaxRequestBytes),
			HeartbeatInterval: durationpb.New(h.cfg.Heartbeat),
			Lease:             durationpb.New(max(h.cfg.Lease, 0)),
			MaxStateKeys:      uint32(h.cfg.StateKeys),
			DedupeWindow:      durationpb.New(max(h.cfg.DedupeWindow, 0)),
			MaxFactBytes:      uint32(h.cfg.MaxFactBytes),
			MaxDataDepth:      uint32(h.cfg.MaxDataDepth),
			MaxRingBytes:      uint64(h.cfg.MaxRingBytes),
			MaxStateBytes:     uint64(h.cfg.MaxStateBytes),
			Store:             h.store.proto(),
		},
	}
}

// publishStatusLocked appends a ServerStatus event describing the hub as it
// is once the event is in the ring. No stream sees the event before the
// lock is released, so its bounds are filled in after the push.
func (h *Hub) publishStatusLocked(at time.Time) {
	seq := h.ring.head + 1
	st := h.statusLocked()
	st.HeadSeq = seq
	ev := newStatusEvent(h.epoch, seq, at, st)
	h.ring.push(ev)
	st.OldestSeq = h.ring.oldest()
	st.RingBytes = uint64(max(h.ring.bytes.Load(), 0))
	h.latest = ev
}

// signal tells the notifier that head advanced; it never blocks. Call it
// after the change, with h.mu released. A reader reads head (and the other
// state it waits on) and takes wake in one critical section of h.mu, so
// when no reader has taken the current channel (wakeTaken clear), there is
// nobody to wake: a reader that takes it later does so after the change,
// and sees it. Then no wake-up is sent, and no channel replaced.
func (h *Hub) signal() {
	if !h.wakeTaken.Load() {
		return
	}
	if h.writing.Load() == 0 && h.takers.Load() <= directWakeTakers {
		// A few streams wait, none is writing: wake them here, without
		// the notifier's hop (a lone subscriber's latency). The woken
		// streams would wait, queued on this thread, until the publisher
		// had written its receipt; yield, so that they write the event
		// first and the receipt follows.
		h.wakeNow()
		runtime.Gosched()
		return
	}
	if len(h.kick) == 0 {
		// When this kick is sent, for the notifier to tell how late it
		// takes it. Set before the send, and kept by a pending kick; a
		// send that races with the notifier taking the pending one may
		// leave an earlier time, which kickDelay discounts.
		h.kickedAt.Store(int64(time.Since(monoStart)))
	}
	select {
	case h.kick <- struct{}{}:
	default: // a wake-up is already pending; it will cover this event too
	}
}

// takeWake returns the channel that closes when head next advances, for a
// reader that read head (and the rest of the state it waits on) in the
// same critical section of h.mu (read or write locked).
func (h *Hub) takeWake() <-chan struct{} {
	if !h.wakeTaken.Load() {
		h.wakeTaken.Store(true)
	}
	if h.takers.Load() <= directWakeTakers { // counting further would tell signal nothing
		h.takers.Add(1)
	}
	return h.wake
}

// directWakeTakers is how many takes of the wake channel signal wakes
// directly; beyond it, closing the channel (O(waiters)) is the notifier's.
const directWakeTakers = 4

// wakeNow closes the wake channel, if taken, and replaces it.
func (h *Hub) wakeNow() {
	h.mu.Lock()
	if !h.wakeTaken.Load() {
		// Nobody took the channel since the last wake-up (see signal):
		// it stays, for whoever waits next.
		h.mu.Unlock()
		return
	}
	ch := h.wake
	h.wake = make(chan struct{})
	h.wakeTaken.Store(false)
	h.takers.Store(0)
	h.mu.Unlock()
	close(ch)
	h.unparkAll()
	h.lastWake.Store(int64(time.Since(monoStart)))
}

// monoStart is the origin of lastWake's monotonic clock.
var monoStart = time.Now()

// Drain publishes ServerStatus(DRAINING) and refuses further publishes.
// Streams deliver everything up to that status, then end (OK). Idempotent.
func (h *Hub) Drain() {
	h.mu.Lock()
	if h.state == ringcastv1.ServerState_SERVER_STATE_DRAINING {
		h.mu.Unlock()
		return
	}
	h.state = ringcastv1.ServerState_SERVER_STATE_DRAINING
	h.backend.drainLocked()
	seq := h.ring.head
	h.mu.Unlock()
	h.signal()
	h.cfg.Logger.Info("draining", "epoch", epoch.Format(h.epoch), "status_seq", seq)
}

// Close ends every stream and stops the notifier. Call Drain first for a
// graceful end. Idempotent.
func (h *Hub) Close() {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.state = ringcastv1.ServerState_SERVER_STATE_DRAINING
		h.mu.Unlock()
		close(h.done)
		h.unparkAll()
		h.runner.close()
		if h.stopFollow != nil {
			h.stopFollow()
		}
		h.notifierWG.Wait()
		if f, ok := h.log.(FlushLog); ok {
			ctx, cancel := context.WithTimeout(context.Background(), flushWait)
			if err := f.Flush(ctx); err != nil {
				h.cfg.Logger.Warn("the store could not finish its bookkeeping before the hub closed", "err", err)
			}
			cancel()
		}
	})
}

// flushWait bounds how long Close waits for a FlushLog's Flush.
const flushWait = 5 * time.Second
