package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

const tailSynopsis = `tail [flags]

Subscribes and prints one JSON object per line: one per fact, and one per
lifecycle signal. Fact lines:
  {"seq":12,"index":0,"last":true,"topic":"…","type":"…","key":"…","data":{…},"time":"…"}
(binary payloads as "binary_data" in base64 with "content_type"). Signal
lines carry "signal" and never "topic" or "type":
  {"signal":"caught_up","head_seq":12}
  {"signal":"resynced","reason":"epoch_mismatch","requested_seq":40,"oldest_seq":1,"head_seq":3,"inline":false}
seq values are JSON numbers (exact up to 2^53); epochs never appear as
numbers.

With --cursor-file the cursor is saved (atomically, synced) after every
line, so a later run continues with the next fact:
  - SIGINT/SIGTERM: exactly once. tail stops between two lines, saves the
    cursor of the last line written and exits 0; the next run prints the
    next fact.
  - SIGKILL (or a crash, or power loss): at least once, with at most one
    line repeated. A kill after a line was written but before its cursor
    was saved makes the next run print that one fact line again (same seq
    and index); nothing is ever skipped. A consumer that must see each fact
    once drops a line whose (seq, index) is not after the last it kept.
  - Temporary files of a save interrupted by a kill (.NAME.tmpDIGITS next to
    the cursor file) are removed when the next run starts.

--since-time 2026-12-01T09:00:00Z (RFC 3339) or --since 15m (that long
before now) starts with every retained commit whose event time is at or
after that time, instead of a snapshot, then tails. They exclude each other
and a --cursor-file that holds a position: with a missing or empty one the
run starts at the time and saves its cursor, and later runs without the
flag continue from it. When commits at or after the time may have been
evicted, tail prints a resynced line and starts from a snapshot.`

func tailCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("tail", tailSynopsis, stderr)
	cf.register(fs)
	cursorFile := fs.String("cursor-file", "", "load the cursor from this file at start and save it after every line (missing file: start from a snapshot)")
	count := fs.Int("count", 0, "stop after this many facts (0: no limit); the cursor is saved")
	var topics stringList
	fs.Var(&topics, "topic", "topic filter (repeatable or comma-separated); a prefix matches at a / boundary")
	snapshot := fs.String("snapshot", "retained", "what a fresh subscription receives first: "+names.SnapshotNames)
	until := fs.Uint64("until", 0, "end after position SEQ (0: no bound)")
	endAtHead := fs.Bool("end-at-head", false, "replay what is there, then end instead of tailing")
	inline := fs.Bool("snapshot-inline", false, "ask for an unservable cursor's snapshot on the same stream (Gap) instead of a resync round trip")
	sinceTime := fs.String("since-time", "", "start with the commits whose event time is at or after this RFC 3339 time (e.g. 2026-12-01T09:00:00Z) instead of a snapshot")
	since := fs.String("since", "", "start with the commits of this long before now (a Go duration, e.g. 15m or 2h) instead of a snapshot")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ringcast tail: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if *count < 0 {
		return errors.New("--count must not be negative")
	}
	snap, ok := names.ParseSnapshot(*snapshot, true)
	if !ok {
		return fmt.Errorf("--snapshot %q: want %s", *snapshot, names.SnapshotNames)
	}
	from, err := tailStart(*sinceTime, *since, time.Now())
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()

	var cur ringcast.Cursor
	if *cursorFile != "" {
		if cur, err = ringcast.LoadCursor(*cursorFile); err != nil {
			return err
		}
		if err := ringcast.RemoveCursorTemps(*cursorFile); err != nil {
			return err
		}
	}
	if !from.IsZero() && cur.Seq != 0 {
		return fmt.Errorf("--since-time/--since start at a time, but %s holds a position (%s) to resume from: drop one of them", *cursorFile, cur)
	}
	opts := []ringcast.SubscribeOption{ringcast.WithCursor(cur), ringcast.WithSnapshot(snap), ringcast.WithTopics(topics...)}
	if *until > 0 {
		opts = append(opts, ringcast.WithUntil(*until))
	}
	if *endAtHead {
		opts = append(opts, ringcast.WithEndAtHead())
	}
	if *inline {
		opts = append(opts, ringcast.WithSnapshotInline())
	}
	if !from.IsZero() {
		opts = append(opts, ringcast.WithSinceTime(from))
	}
	// The first connection decides: a stream that fails before its first
	// message ends the command with the reason, unless --retry; once one
	// stream opened, the subscription retries what is transient on its own.
	firstCtx, stop := context.WithCancel(ctx)
	defer stop()
	var opened bool
	var failed error // why the first stream failed, without --retry
	orNoMessage := func(err error) error {
		if err == nil { // an OK end before any message: ringcast sends one at once
			return fmt.Errorf("%s ended the stream before its first message (is --server a ringcast server?)", cf.server)
		}
		return err
	}
	opts = append(opts, ringcast.WithConnectionEvents(func(ev ringcast.ConnectionEvent) {
		switch {
		case ev.State == ringcast.StateOpen:
			opened = true
		case ev.State != ringcast.StateReconnecting || opened:
		case cf.retry:
			if ev.Attempt == 0 {
				fmt.Fprintf(stderr, "ringcast tail: %v; retrying (--retry)\n", cf.explain(orNoMessage(ev.Err)))
			}
		default:
			failed = orNoMessage(ev.Err)
			stop()
		}
	}))
	sub := c.Subscribe(opts...)
	save := func(c ringcast.Cursor) error {
		if *cursorFile == "" {
			return nil
		}
		return ringcast.SaveCursor(*cursorFile, c)
	}

	facts := 0
	for it, err := range sub.Items(firstCtx) {
		if err != nil {
			switch {
			case failed != nil:
				return cf.explain(failed)
			case ctx.Err() != nil:
				// SIGINT/SIGTERM: stop between two lines
			case !opened:
				return cf.explain(err) // a permanent error at once
			default:
				_ = save(sub.Cursor())
				return err
			}
			break
		}
		line, err := tailLine(it)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(line); err != nil {
			return err
		}
		if err := save(it.Cursor); err != nil {
			return err
		}
		if it.Kind == ringcast.KindFact {
			facts++
			if *count > 0 && facts >= *count {
				break
			}
		}
	}
	// The subscription's cursor also covers Progress received after the
	// last line (filtered commits), so the next run need not re-cover them.
	return save(sub.Cursor())
}

// tailStart is the time --since-time or --since asks to start at (zero:
// neither was given).
func tailStart(sinceTime, since string, now time.Time) (time.Time, error) {
	switch {
	case sinceTime != "" && since != "":
		return time.Time{}, errors.New("--since-time and --since are two ways to give the start: use one")
	case sinceTime != "":
		t, err := time.Parse(time.RFC3339Nano, sinceTime)
		if err != nil {
			return time.Time{}, fmt.Errorf("--since-time %q: want an RFC 3339 time such as 2026-12-01T09:00:00Z", sinceTime)
		}
		if t.Year() < 1 || t.Year() > 9999 {
			return time.Time{}, fmt.Errorf("--since-time %q: want a year in 0001..9999", sinceTime)
		}
		return t, nil
	case since != "":
		d, err := time.ParseDuration(since)
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("--since %q: want a positive duration such as 15m or 2h", since)
		}
		return now.Add(-d), nil
	}
	return time.Time{}, nil
}

// factLine is one fact on stdout. Field order is the output's.
type factLine struct {
	Seq         uint64          `json:"seq"`
	Index       uint32          `json:"index"`
	Last        bool            `json:"last"`
	Topic       string          `json:"topic"`
	Type        string          `json:"type"`
	Key         string          `json:"key"`
	Data        json.RawMessage `json:"data,omitempty"`
	BinaryData  *string         `json:"binary_data,omitempty"`
	ContentType string          `json:"content_type,omitempty"`
	Time        string          `json:"time,omitempty"`
}

// signalLine is one lifecycle signal on stdout: it has no topic or type.
type signalLine struct {
	Signal       string  `json:"signal"`
	Reason       string  `json:"reason,omitempty"`
	RequestedSeq *uint64 `json:"requested_seq,omitempty"`
	OldestSeq    *uint64 `json:"oldest_seq,omitempty"`
	HeadSeq      uint64  `json:"head_seq"`
	Inline       *bool   `json:"inline,omitempty"`
}

// tailLine renders an item as one JSON line (with its newline).
func tailLine(it ringcast.Item) ([]byte, error) {
	var v any
	switch it.Kind {
	case ringcast.KindFact:
		f := it.Fact
		l := factLine{Seq: it.Seq, Index: it.Index, Last: it.Last, Topic: f.GetTopic(), Type: f.GetType(), Key: f.GetKey()}
		if !it.Time.IsZero() {
			l.Time = it.Time.UTC().Format(time.RFC3339Nano)
		}
		switch p := f.GetPayload().(type) {
		case *ringcastv1.Fact_Data:
			b, err := protojson.Marshal(p.Data)
			if err != nil {
				return nil, fmt.Errorf("fact %d/%d: %w", it.Seq, it.Index, err)
			}
			l.Data = b
		case *ringcastv1.Fact_BinaryData:
			s := base64.StdEncoding.EncodeToString(p.BinaryData)
			l.BinaryData, l.ContentType = &s, f.GetContentType()
		}
		v = l
	case ringcast.KindCaughtUp:
		v = signalLine{Signal: it.Kind.String(), HeadSeq: it.HeadSeq}
	case ringcast.KindResynced:
		r := it.Resync
		v = signalLine{
			Signal:       it.Kind.String(),
			Reason:       names.ReasonName(r.Reason),
			RequestedSeq: &r.RequestedSeq,
			OldestSeq:    &r.OldestSeq,
			HeadSeq:      r.HeadSeq,
			Inline:       &r.Inline,
		}
	default:
		return nil, fmt.Errorf("unexpected item kind %v", it.Kind)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
