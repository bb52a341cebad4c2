// Package natslog is the hub's durable Log on NATS JetStream: one stream,
// one message per commit (all its facts), the stream sequence as the
// commit's seq, the stream's identity as the instance epoch, and
// JetStream's duplicate window (Nats-Msg-Id) for idempotency keys. Every
// replica follows the stream with an ordered consumer, so a commit
// published through any replica reaches every replica's subscribers.
package natslog

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/settings"
)

// The defaults of Options' zero fields. natslog owns the stream's name and
// the request timeout; the replicas and the duplicate window (the hub's
// dedupe window) are rows of package settings, read here.
const (
	DefaultStream  = "ringcast"
	DefaultTimeout = 5 * time.Second
)

var (
	DefaultReplicas   = settings.NATSReplicas.Default
	DefaultDuplicates = settings.DedupeWindow.Default
)

// Options configure a Log. Zero fields take the defaults documented on
// them. The stream limits apply only when Open creates the stream.
type Options struct {
	// Stream is the stream's name. Default DefaultStream.
	Stream string
	// Replicas is the stream's replication factor, 1 or 3. Default
	// DefaultReplicas.
	Replicas int
	// MaxBytes, MaxAge and MaxMsgs limit the stream (0: unlimited); the
	// oldest commits are discarded first. Package app gives the server's
	// defaults here (settings.NATSMaxBytes, settings.NATSMaxAge): a
	// stream `ringcast serve` creates is bounded unless told otherwise.
	MaxBytes int64
	MaxAge   time.Duration
	MaxMsgs  int64
	// Duplicates is the stream's duplicate window for idempotency keys.
	// Default DefaultDuplicates.
	Duplicates time.Duration
	// Timeout bounds each request to JetStream (append, read, range).
	// Default DefaultTimeout.
	Timeout time.Duration
	// Logger receives lifecycle logs. Default: discard.
	Logger *slog.Logger
	// Recover makes Open serve the stream under a new epoch, logged at
	// Warn: a damaged stream (see DamagedError) instead of refusing it, and
	// a whole one too (a restored copy of an older store, whose seqs would
	// otherwise be given again to other commits under the old epoch). Open
	// then first reads every commit and removes those whose bytes do not
	// match their checksum (holes the new epoch accepts). Every Open with
	// Recover starts another epoch: use it for one start after a restore
	// or damage, not on every start.
	Recover bool
	// LargestCommit is the largest commit, in bytes, the server's request
	// limits allow (hub.MaxCommitBytes). Open logs at Warn when the NATS
	// server's max_payload cannot carry it. 0: no check.
	LargestCommit int
	// SoleWriter says no one but this Log appends to the stream, as on
	// the embedded server, which only this process reaches: Follow then
	// reads the stream to its end and after that only what the hub could
	// not take from the appends' acknowledgements (see Follow). A stream
	// other writers append to must not be opened with it: their commits
	// would not reach the hub.
	SoleWriter bool
}

func (o Options) withDefaults() Options {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.Duplicates == 0 {
		o.Duplicates = DefaultDuplicates
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// maxReads is how many Reads of one Log run at once.
const maxReads = 16

// Subject is the subject a stream's commits are published on.
func Subject(stream string) string { return "ringcast." + stream + ".commits" }

// Log is a hub.Log on a JetStream stream. It does not own the connection.
type Log struct {
	opts    Options
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string
	// ackPrefix starts a plain acknowledgement from the stream (plainAck).
	ackPrefix []byte
	epoch     uint64
	info      jetstream.StreamConfig
	created   time.Time
	// reads bounds the reads in flight: a reconnect storm of old cursors
	// queues here rather than in JetStream's API.
	reads  chan struct{}
	blocks blocks

	// head is the highest seq this Log has appended or followed: blocks up
	// to it are whole in the stream and may be cached.
	head atomic.Uint64
	// directGets and directMsgs count direct get requests and the messages
	// they returned (tests count reads with them).
	directGets, directMsgs atomic.Uint64

	mu     sync.Mutex
	atomic bool // the stream allows atomic batch publish (see AppendBatch)

	// The record of the stream in MetaBucket (see mark.go): kv and key
	// locate it; gen is the generation this Log serves; marked is the
	// high-water mark recorded; first and deleted are the first seq and
	// the holes the stream may have without damage.
	kv                     jetstream.KeyValue
	key                    string
	gen                    uint64
	marked, first, deleted atomic.Uint64
	markMu                 sync.Mutex
	cached                 record // guarded by markMu, at revision rev (0: read again)
	rev                    uint64
	// bookErr is set while the record is known to be lost (bookkeeping.go):
	// commits are refused before they reach the stream.
	bookErr atomic.Pointer[BookkeepingError]
	// intake is the hub's, once it asked for the commits this Log stores
	// (Echo); nil until then.
	intake atomic.Pointer[hub.Intake]
	// The mark's writer (mark.go, raise): wanted is the highest seq it was
	// asked to record, marking is set while it runs, markErr is its last
	// write's failure (nil: none).
	wanted  atomic.Uint64
	marking atomic.Bool
	markErr atomic.Pointer[error]
	// fill wakes a Follow idle at the stream's end (wantFill); following
	// is set once an append left the Log unsure (Follow).
	fill      chan struct{}
	following atomic.Bool
	// tail is the stream's last seq when Open found it. Seqs up to it past
	// the stream's last commit are holes (a recovery removed them), which
	// the hub goes past only when Follow reads a later commit: a sole
	// writer's Follow reads at least that far.
	tail uint64
}

var _ hub.EchoLog = (*Log)(nil)

// Echo implements hub.EchoLog: from now on every commit Append and
// AppendBatch store is handed to in.Take once JetStream acknowledged it,
// and Follow goes past the commits in.Held reports without decoding them.
func (l *Log) Echo(in hub.Intake) { l.intake.Store(&in) }

// echo hands a commit this Log stored at seq to the hub's intake, as
// decode would give it back from the stream.
func (l *Log) echo(seq uint64, at time.Time, c hub.Commit, crc uint32) {
	if in := l.intake.Load(); in != nil && !in.Take(l.event(seq, storedTime(at), c.Facts, c.Traceparent, crc)) {
		l.wantFill() // Follow brings it
	}
}

// storedTime is at as the stream keeps it: a protobuf Timestamp, read back
// in UTC without a monotonic reading.
func storedTime(at time.Time) time.Time { return time.Unix(at.Unix(), int64(at.Nanosecond())).UTC() }

// event is the hub's event of the commit stored at seq whose payload and
// traceparent have the checksum crc (fingerprint.Sum).
func (l *Log) event(seq uint64, at time.Time, facts []*ringcastv1.Fact, traceparent string, crc uint32) *hub.Event {
	return hub.NewStoredCommitEvent(l.epoch, seq, at, facts, traceparent, fingerprint.Of(crc))
}

// saw records that the stream holds seq.
func (l *Log) saw(seq uint64) {
	for {
		h := l.head.Load()
		if seq <= h || l.head.CompareAndSwap(h, seq) {
			return
		}
	}
}

var _ hub.Log = (*Log)(nil)

// Open uses the stream named in opts on nc, creating it with opts' limits
// when it does not exist. An existing stream is used as it is; Config
// reports its real limits.
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if opts.Replicas != 1 && opts.Replicas != 3 {
		return nil, fmt.Errorf("nats-replicas must be 1 or 3, not %d", opts.Replicas)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, nc: nc, js: js, subject: Subject(opts.Stream), ackPrefix: ackPrefix(opts.Stream), reads: make(chan struct{}, maxReads), fill: make(chan struct{}, 1)}
	long := ctx // the check of every commit with Recover takes as long as it needs
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	st, err := js.Stream(ctx, opts.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        opts.Stream,
			Description: "ringcast commits, one message per commit",
			Subjects:    []string{l.subject},
			Storage:     jetstream.FileStorage,
			Replicas:    opts.Replicas,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxBytes:    orUnlimited(opts.MaxBytes),
			MaxAge:      opts.MaxAge,
			MaxMsgs:     orUnlimited(opts.MaxMsgs),
			Duplicates:  opts.Duplicates,
			AllowDirect: true,
			// PublishBatch: several commits stored whole or not at all.
			AllowAtomicPublish: true,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = js.Stream(ctx, opts.Stream) // another replica created it first
		}
		if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == 10047 && opts.MaxBytes > 0 {
			// JetStream sets a stream's byte limit aside from its storage
			// when it creates the stream.
			return nil, fmt.Errorf("JetStream stream %q: %w: JetStream cannot set aside the stream's byte limit, %d bytes (--nats-max-bytes), from the storage it has; lower --nats-max-bytes, or give JetStream more storage (the embedded store's is 75%% of the disk space free in --data-dir when it starts)",
				opts.Stream, err, opts.MaxBytes)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("JetStream stream %q: %w", opts.Stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("JetStream stream %q: %w", opts.Stream, err)
	}
	if !hasSubject(info.Config.Subjects, l.subject) {
		return nil, fmt.Errorf("JetStream stream %q exists without the subject %q", opts.Stream, l.subject)
	}
	l.stream, l.info, l.created = st, info.Config, info.Created
	l.atomic = info.Config.AllowAtomicPublish
	if l.kv, err = l.meta(ctx); err != nil {
		return nil, err
	}
	l.key = metaKey(opts.Stream)
	if err := l.check(ctx, long, info); err != nil {
		return nil, err
	}
	l.info = info.Config
	l.saw(info.State.LastSeq)
	l.tail = info.State.LastSeq
	l.warnPayload()
	opts.Logger.Info("JetStream stream",
		"stream", info.Config.Name, "epoch", epoch.Format(l.epoch), "created", info.Created,
		"replicas", info.Config.Replicas, "max_bytes", info.Config.MaxBytes, "max_age", info.Config.MaxAge,
		"max_msgs", info.Config.MaxMsgs, "duplicates", info.Config.Duplicates,
		"atomic_publish", info.Config.AllowAtomicPublish,
		"first", info.State.FirstSeq, "last", info.State.LastSeq, "acknowledged", l.marked.Load(), "generation", l.gen)
	return l, nil
}

func orUnlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

func hasSubject(subjects []string, s string) bool {
	for _, x := range subjects {
		if x == s {
			return true
		}
	}
	return false
}

// Epoch is the instance epoch of a stream: a hash of its name and creation
// time, so every replica and every restart agrees on it, and a stream
// deleted and created again gets another.
func Epoch(name string, created time.Time) uint64 {
	sum := sha256.Sum256([]byte(name + "\x00" + created.UTC().Format(time.RFC3339Nano)))
	e := binary.BigEndian.Uint64(sum[:8])
	if e == 0 {
		e = 1
	}
	return e
}

// Config is the stream's configuration as JetStream reported it at Open:
// its real limits, whoever created it.
func (l *Log) Config() jetstream.StreamConfig { return l.info }

// DedupeWindow is the stream's duplicate window, within which a key is a
// duplicate; the hub reports it in ServerStatus limits.
func (l *Log) DedupeWindow() time.Duration { return l.info.Duplicates }

// StoreLimits is the stream's limits as JetStream reported them at Open
// (0: no bound); the hub reports them in ServerStatus limits.
func (l *Log) StoreLimits() hub.StoreLimits {
	return hub.StoreLimits{MaxBytes: max(l.info.MaxBytes, 0), MaxAge: l.info.MaxAge, MaxCommits: max(l.info.MaxMsgs, 0)}
}

// Info is the stream's current information (state, cluster, config).
func (l *Log) Info(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	return l.stream.Info(ctx)
}

// Epoch implements hub.Log.
func (l *Log) Epoch() uint64 { return l.epoch }

// Append implements hub.Log: the commit is one message, acknowledged by
// JetStream before Append returns; its key is the Nats-Msg-Id.
func (l *Log) Append(ctx context.Context, at time.Time, c hub.Commit) (hub.Receipt, error) {
	m, crc, err := l.message(at, c)
	if err != nil {
		return hub.Receipt{}, err
	}
	if err := l.refuseUnbooked(); err != nil {
		return hub.Receipt{}, err
	}
	if err := l.markFailure(); err != nil {
		return hub.Receipt{}, err
	}
	ctx, cancel := l.appendContext(ctx)
	defer cancel()
	known := l.head.Load()
	ack, err := l.publish(ctx, m)
	if err != nil {
		l.unsure(err)
		return hub.Receipt{}, l.condition(err)
	}
	if !ack.Duplicate && ack.Seq <= known {
		err := l.replacedAck(ack.Seq, known)
		l.unsure(err)
		return hub.Receipt{}, err
	}
	l.saw(ack.Seq)
	if !ack.Duplicate {
		l.echo(ack.Seq, at, c, crc)
	}
	l.raise(ack.Seq)
	// A duplicate's PubAck carries the original's stream sequence (JetStream
	// keeps it with the key for the duplicate window; a key whose original
	// is still being stored is an error, retried by the client).
	if ack.Duplicate {
		return l.duplicate(ctx, ack.Seq, at, c, 0, 1)
	}
	return hub.Receipt{Seq: ack.Seq, Time: at}, nil
}

// appendContext bounds an append's requests by the Log's Timeout. A Log
// that reads the stream only to its end (Follow) waits for JetStream's
// answer even when the caller gives up, so that a commit stored still
// reaches the hub from its acknowledgement.
func (l *Log) appendContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.opts.SoleWriter {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, l.opts.Timeout)
}

// message is the stream message of one commit: the commit event in the
// payload, its key as Nats-Msg-Id (msgID) with its request's digest
// (digestHeader), its trace context as traceparent; and its checksum.
func (l *Log) message(at time.Time, c hub.Commit) (*nats.Msg, uint32, error) {
	data, err := proto.Marshal(&ringcastv1.SubscribeEventsResponse{
		EventTime: timestamppb.New(at),
		Event:     &ringcastv1.SubscribeEventsResponse_Commit{Commit: &ringcastv1.Commit{Facts: c.Facts, FactCount: uint32(len(c.Facts))}},
	})
	if err != nil {
		return nil, 0, err
	}
	m := nats.NewMsg(l.subject)
	m.Data = data
	m.Header.Set(jetstream.ExpectedStreamHeader, l.opts.Stream)
	if c.IdempotencyKey != "" {
		m.Header.Set(jetstream.MsgIDHeader, msgID(c.Key()))
		m.Header.Set(digestHeader, digestText(c.Digest()))
	}
	if c.Traceparent != "" {
		m.Header.Set(traceparentHeader, c.Traceparent)
	}
	crc := fingerprint.Sum(data, c.Traceparent)
	m.Header.Set(sumHeader, formatSum(crc))
	// An atomic batch's headers (batch.go) take a few bytes more: within
	// HeaderRoom, and the NATS client refuses the rest as nats.ErrMaxPayload.
	if err := l.fits(m.Size()); err != nil {
		return nil, 0, err
	}
	return m, crc, nil
}

// msgID is the Nats-Msg-Id of an idempotency key in its publisher's space:
// "rk1-" and the unpadded base64url SHA-256 of hub.Key.ID. A header value
// is not a key's bytes (the NATS client trims and folds whitespace in
// headers, and a line end would end the header), and a hash of the exact
// bytes is 47 characters of [A-Za-z0-9_-] whatever the key: no header
// handling can merge two keys or split one. Keys stored before ringcast
// scoped them by publisher were their own Nats-Msg-Id, which no msgID is.
func msgID(k hub.Key) string {
	sum := sha256.Sum256([]byte(k.ID()))
	return "rk1-" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// digestHeader keeps a keyed commit's request digest (hub.Digest), so a
// reuse of its key with other facts is refused (hub.ErrKeyReused) on every
// replica and after restarts.
const digestHeader = "Ringcast-Digest"

func digestText(d hub.Digest) string { return base64.RawURLEncoding.EncodeToString(d[:]) }

// traceparentHeader is the message header that keeps a commit's trace
// context, Commit.traceparent (docs/protocol.md, "Publish"), under the
// same name as the request header a publish brings it in.
const traceparentHeader = "traceparent"

// sumHeader is the message header that keeps a commit's checksum, the
// CRC-32C of its payload and traceparent (fingerprint.Sum) in hex, so that bytes of a stored commit changed on disk are found
// when it is read, even where the NATS server does not check its own.
const sumHeader = "Ringcast-Sum"

func formatSum(sum uint32) string { return strconv.FormatUint(uint64(sum), 16) }

// decode turns a stored commit message into the hub's event. A message
// whose checksum does not match, or that does not decode, is an error
// wrapping hub.ErrLogDamaged. A message without a checksum (stored before
// commits carried one, or by an older replica) is taken as it is.
//
// The event's fingerprint is fingerprint.Of(the checksum), computed from
// the stored bytes whether or not the message carries its checksum: every
// replica and every restart derives the same one from the same commit.
func (l *Log) decode(seq uint64, hdr nats.Header, data []byte) (*hub.Event, error) {
	tp := hdr.Get(traceparentHeader)
	crc := fingerprint.Sum(data, tp)
	if sum := hdr.Get(sumHeader); sum != "" && sum != formatSum(crc) {
		return nil, &CorruptError{Stream: l.opts.Stream, Seq: seq}
	}
	var m ringcastv1.SubscribeEventsResponse
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: JetStream stream %q: the commit at seq %d does not decode: %w", hub.ErrLogDamaged, l.opts.Stream, seq, err)
	}
	return l.event(seq, m.GetEventTime().AsTime(), m.GetCommit().GetFacts(), tp, crc), nil
}

// A CorruptError is the error of reading a commit whose bytes changed in
// storage. It wraps hub.ErrLogDamaged.
type CorruptError struct {
	Stream string
	Seq    uint64
	// Upto, when set, is the last of the seqs from Seq that the NATS
	// server skipped though the stream holds them.
	Upto uint64
}

func (e *CorruptError) Error() string {
	if e.Upto != 0 {
		return fmt.Sprintf("JetStream stream %q: the commits from seq %d to %d cannot be read (damaged on disk)", e.Stream, e.Seq, e.Upto)
	}
	return fmt.Sprintf("JetStream stream %q: the commit at seq %d is corrupted (its checksum does not match its bytes)", e.Stream, e.Seq)
}

func (e *CorruptError) Unwrap() error { return hub.ErrLogDamaged }

// Range implements hub.Log from the stream's state.
func (l *Log) Range(ctx context.Context) (first, last uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	known := max(l.head.Load(), l.marked.Load()) // before the question: what the answer must hold
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, 0, l.condition(err)
	}
	if err := l.same(info); err != nil {
		return 0, 0, err
	}
	if err := l.checkRunning(ctx, known, info); err != nil {
		return 0, 0, err
	}
	s := info.State
	l.saw(s.LastSeq)
	if s.Msgs == 0 {
		return s.LastSeq + 1, s.LastSeq, nil
	}
	if s.NumDeleted > 0 {
		// Holes a recovery accepted (anything else is damage): the last
		// commit the stream holds may be below its last seq.
		m, err := l.stream.GetLastMsgForSubject(ctx, l.subject)
		if err != nil {
			return 0, 0, err
		}
		return s.FirstSeq, m.Sequence, nil
	}
	return s.FirstSeq, s.LastSeq, nil
}

// same returns an error wrapping hub.ErrLogReplaced when info is another
// stream than the one Open found: same name, another creation time.
func (l *Log) same(info *jetstream.StreamInfo) error {
	if info.Created.Equal(l.created) {
		return nil
	}
	return fmt.Errorf("%w: JetStream stream %q was created again at %s; this replica opened the one created at %s (epoch %s)",
		hub.ErrLogReplaced, l.opts.Stream, info.Created.UTC().Format(time.RFC3339Nano), l.created.UTC().Format(time.RFC3339Nano), epoch.Format(l.epoch))
}

// replacedAck is the error of a new (not duplicate) commit that JetStream
// stored at seq, no higher than known, the head this Log had seen before it
// sent the commit. In one stream that cannot be: the head only comes from
// this stream (acks, Follow, and Range, which checks the stream's creation
// time first), so a commit already stored at known when the publish was
// sent, and JetStream gives each new message a seq above every message
// stored before it. Publishes from other replicas cannot cause it either:
// however they interleave, a message stored after known was stored gets a
// higher seq, and known is read before the publish is sent, never after
// (a later ack or followed commit may raise the head meanwhile; the check
// does not look at it). So the stream was deleted and created again, and
// the commit is in the new one: answering it with this Log's epoch would
// point at another commit. The error wraps hub.ErrLogReplaced, on which
// the hub drains (Hub.Failed). A commit the new stream stores above known
// is not caught here; Range (about every second) and Follow catch the
// replacement.
func (l *Log) replacedAck(seq, known uint64) error {
	return fmt.Errorf("%w: JetStream stream %q stored a new commit at seq %d, yet this replica had seen seq %d of the stream it opened (epoch %s)",
		hub.ErrLogReplaced, l.opts.Stream, seq, known, epoch.Format(l.epoch))
}

// checkSame asks JetStream for the stream and returns what same says.
func (l *Log) checkSame(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return err
	}
	return l.same(info)
}

// followBufferBytes is the least the ordered consumer of Follow buffers,
// in bytes: it pulls by bytes rather than by count, so that a start-up
// reads a stream of large commits at disk speed (pulls of 500 messages,
// the client's default, read 900 KB commits at about 50 MB/s on a 2-core
// machine, by bytes above 400 MB/s: BenchmarkStartUpRead,
// docs/performance.md, "Start-up").
const followBufferBytes = 64 << 20

// followBuffer is Follow's pull buffer: followBufferBytes, and never less
// than two of the largest messages the server takes (a buffer smaller than
// a message stalls the consumer).
func (l *Log) followBuffer() int {
	return int(max(followBufferBytes, 2*l.nc.MaxPayload()))
}

// Follow implements hub.Log with an ordered consumer, which JetStream's
// client recreates after connection losses at the position it reached —
// by the stream's name, so on a stream deleted and created again too.
// Follow therefore checks the stream is the one Open found before it
// starts and whenever messages come from another consumer than the last
// (the first, or one recreated), before applying them.
//
// A Log that is the stream's only writer (Options.SoleWriter) with the
// hub's intake (Echo) reads the stream only up to its end: the commits
// stored after that are its own appends', which enter the ring from
// their acknowledgement. It reads again, from where the hub's ring holds
// every commit (Intake.Head), when the hub could not take one of them
// (fill); and for good (following) once an append failed in a way that
// may still have stored its commit (unsure).
func (l *Log) Follow(ctx context.Context, from uint64, apply func(*hub.Event)) error {
	if err := l.checkSame(ctx); err != nil {
		return err
	}
	next := max64(from, 1) // the seq expected next
	if first, _, err := l.Range(ctx); err != nil {
		return err
	} else if first > next {
		next = 0 // from is below the stream's first seq: no gap to check before the first message
	}
	idle := false // read to the stream's end: wait for a fill before reading again
	for {
		in := l.intake.Load()
		if idle {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-l.fill:
			}
			if h := in.Head() + 1; h > next {
				next = h
			}
		}
		if l.readsToEnd() {
			if _, last, err := l.Range(ctx); err != nil {
				return err
			} else if last < max64(next, 1) && next > l.tail {
				idle = true // nothing to read
				continue
			}
		}
		var err error
		if next, err = l.follow(ctx, next, apply); err != nil {
			return err
		}
		idle = true
	}
}

// readsToEnd reports whether Follow stops at the stream's end (see
// Follow): the Log is the stream's only writer, hands the hub its
// appends, and no append left it unsure.
func (l *Log) readsToEnd() bool {
	return l.opts.SoleWriter && l.intake.Load() != nil && !l.following.Load()
}

// follow reads the stream from next with an ordered consumer, handing
// apply each commit the hub does not hold, until ctx ends or a read fails;
// or, when readsToEnd, until it read the stream's last message then (and
// at least one past the holes at its tail). It returns the seq expected
// next.
func (l *Log) follow(ctx context.Context, next uint64, apply func(*hub.Event)) (uint64, error) {
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{l.subject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    max64(next, 1),
	})
	if err != nil {
		return next, err
	}
	it, err := cons.Messages(jetstream.PullMaxBytes(l.followBuffer()))
	if err != nil {
		return next, err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	consumer := "" // the consumer the last message came from
	defer func() {
		it.Stop()
		// A stopped consumer stays on the server until it has been idle
		// for minutes (the client's inactive threshold), told of every
		// message stored: delete it now.
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.Timeout)
			_ = l.stream.DeleteConsumer(dctx, info.Name)
			cancel()
		}
	}()
	// Next is also told of ctx: Stop alone does not always end a Next under
	// way (a Stop that lands while the ordered consumer recreates its
	// consumer, as it does when the stream is deleted, stops the old one
	// and Next goes on waiting on the new), and the hub waits for Follow
	// to return before it closes.
	untilDone := jetstream.NextContext(ctx)
	for {
		msg, err := it.Next(untilDone)
		if err != nil {
			if ctx.Err() != nil {
				return next, ctx.Err()
			}
			return next, err
		}
		md, err := msg.Metadata()
		if err != nil {
			return next, err
		}
		if md.Consumer != consumer {
			if err := l.checkSame(ctx); err != nil {
				return next, err
			}
			consumer = md.Consumer
		}
		seq := md.Sequence.Stream
		if next != 0 && seq > next {
			if err := l.checkGap(ctx, next, seq-1); err != nil {
				return next, err
			}
		}
		next = seq + 1
		l.saw(seq)
		if in := l.intake.Load(); in == nil || !in.Held(seq) {
			ev, err := l.decode(seq, msg.Headers(), msg.Data())
			if err != nil {
				return next, err
			}
			apply(ev)
		} // else this replica's own commit, in the hub from its acknowledgement
		if md.NumPending == 0 && seq >= l.tail && l.readsToEnd() {
			return next, nil
		}
	}
}

// wantFill asks an idle Follow (see Follow) to read the stream again.
func (l *Log) wantFill() {
	select {
	case l.fill <- struct{}{}:
	default: // one is asked for already
	}
}

// unsure is told of every append that failed after its commit may have
// reached JetStream: anything but a refusal (JetStream's API error, a
// commit too large, a batch the stream does not take). The
// commit may be stored without the hub having it, so a Log that reads to
// the stream's end only (Follow) follows the stream from then on.
func (l *Log) unsure(err error) {
	var apiErr *jetstream.APIError
	if err == nil || !l.opts.SoleWriter || errors.As(err, &apiErr) ||
		errors.Is(err, hub.ErrCommitTooLarge) || errors.Is(err, hub.ErrBatchUnsupported) { // refused before it was stored
		return
	}
	if !l.following.Swap(true) {
		l.opts.Logger.Info("an append failed without JetStream's answer; following the stream from now on", "stream", l.opts.Stream, "err", err)
	}
	l.wantFill()
}
