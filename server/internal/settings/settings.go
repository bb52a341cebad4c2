// Package settings is the one table of the server's numeric settings: for
// each, the serve flag that sets it (and its RINGCAST_ variable), its
// default, the values it accepts, and whether 0 means the default and a
// negative value means none (no bound, disabled).
//
// The packages that take a setting fill a zero field from its row (Or):
// the hub, package limit, the store and package app read these defaults
// here and write none of them down again (a default derived from another
// setting or the host, DefaultIs, is computed where it is used). serve
// checks its flags against the rows and shows
// them in its help (server/cmd/ringcast/bounds.go); docs/limits.md, "Flag
// bounds", lists them, and a test checks that it does. The table is read
// only: nothing assigns to its rows.
package settings

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Number is what a setting holds: a count, bytes, a rate, or a duration.
type Number interface{ ~int | ~int64 | ~float64 }

// Setting is one numeric setting of the server.
type Setting[T Number] struct {
	// Name is the serve flag (--Name) and, upper-cased with _ for -, the
	// RINGCAST_ variable.
	Name string
	// Default is the value a zero field (and, with ZeroDefault, a 0 flag)
	// takes. A default that depends on another setting or on the host is
	// computed where it is used, described by DefaultIs; Default is then 0.
	Default   T
	DefaultIs string
	// Min and Max bound the values accepted (inclusive).
	Min, Max T
	// ZeroDefault: 0 means the default. NegativeNone: a negative value
	// means none (no bound, disabled). A value outside Min..Max is
	// refused otherwise.
	ZeroDefault, NegativeNone bool
}

// Or is v, or the default when v is 0.
func (s Setting[T]) Or(v T) T {
	if v == 0 {
		return s.Default
	}
	return v
}

// Row is s with its values as float64s (a duration's in nanoseconds), for
// checking and describing flags of every type alike.
func (s Setting[T]) Row() Row {
	_, isDuration := any(s.Default).(time.Duration)
	return Row{Name: s.Name, Default: float64(s.Default), DefaultIs: s.DefaultIs, Min: float64(s.Min), Max: float64(s.Max),
		Duration: isDuration, ZeroDefault: s.ZeroDefault, NegativeNone: s.NegativeNone}
}

// Check reports v outside what s accepts (Row.Check), in the one wording
// every check of a setting uses: serve's flags and the Validate methods of
// the packages that take the setting.
func (s Setting[T]) Check(v T) error { return s.Row().Check(float64(v)) }

// CheckMin is Check without the upper bound, for a package whose callers
// may go past what serve accepts (a test's coalesce window longer than its
// hang guard): v below Min (and not 0 or negative where those mean the
// default or none) is refused in Check's wording.
func (s Setting[T]) CheckMin(v T) error {
	r := s.Row()
	r.Max = math.Inf(1)
	if err := r.Check(float64(v)); err != nil {
		return fmt.Errorf("%s must be at least %s, not %s", r.Name, r.Format(r.Min), r.Format(float64(v)))
	}
	return nil
}

// Exceeds is the one wording of a rule between two settings, checked by
// the package that takes them: a must not exceed b ("coalesce must not
// exceed heartbeat").
func Exceeds(a, b string) error { return fmt.Errorf("%s must not exceed %s", a, b) }

// Row is a setting with its values as float64s (see Setting).
type Row struct {
	Name                      string
	Default                   float64
	DefaultIs                 string
	Min, Max                  float64
	Duration                  bool
	ZeroDefault, NegativeNone bool
}

// Check reports v (a duration's in nanoseconds) outside r: a value from
// Min to Max, 0 when it means the default (ZeroDefault), any negative value
// when it means none (NegativeNone). NaN and ±Inf are never accepted. The
// error names the setting and says what it accepts: "window must be
// between 1 and 16777216, not 0".
func (r Row) Check(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s must be a finite number %s, not %v", r.Name, r.Describe(), v)
	case v == 0 && r.ZeroDefault, v < 0 && r.NegativeNone, r.Min <= v && v <= r.Max:
		return nil
	}
	return fmt.Errorf("%s must be %s, not %s", r.Name, r.Describe(), r.Format(v))
}

// Describe says what r accepts: "between 1 and 16777216 (or negative:
// none)".
func (r Row) Describe() string {
	s := "between " + r.Format(r.Min) + " and " + r.Format(r.Max)
	var or []string
	if r.ZeroDefault {
		or = append(or, "0: the default")
	}
	if r.NegativeNone {
		or = append(or, "negative: none")
	}
	if len(or) > 0 {
		s += " (or " + strings.Join(or, "; ") + ")"
	}
	return s
}

// Format renders a value of r as its flag takes it: a duration without
// trailing zero units ("1h", not "1h0m0s"), a number in full.
func (r Row) Format(v float64) string { return FormatValue(v, r.Duration) }

// FormatValue is Row.Format for a duration (in nanoseconds) or a number.
func FormatValue(v float64, isDuration bool) string {
	if !isDuration {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := time.Duration(v).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// The hub (package hub).
var (
	Window              = Setting[int]{Name: "window", Default: 1024, Min: 1, Max: 1 << 24}
	Heartbeat           = Setting[time.Duration]{Name: "heartbeat", Default: 15 * time.Second, Min: 100 * time.Millisecond, Max: time.Hour, ZeroDefault: true}
	Coalesce            = Setting[time.Duration]{Name: "coalesce", Default: time.Millisecond, Min: 0, Max: time.Second} // a zero field: never hold (hub.Config.Coalesce); serve's default is 1ms
	Lease               = Setting[time.Duration]{Name: "lease", Default: 30 * time.Minute, Min: time.Second, Max: 7 * 24 * time.Hour, ZeroDefault: true, NegativeNone: true}
	StateKeys           = Setting[int]{Name: "state-keys", Default: 65536, Min: 1, Max: 1 << 24}
	DedupeWindow        = Setting[time.Duration]{Name: "dedupe-window", Default: 10 * time.Minute, Min: time.Second, Max: 24 * time.Hour, ZeroDefault: true}
	DedupeKeys          = Setting[int]{Name: "dedupe-keys", Default: 65536, Min: 1, Max: 1 << 24}
	DedupeKeysPerClient = Setting[int]{Name: "dedupe-keys-per-client", DefaultIs: "half of --dedupe-keys", Min: 1, Max: 1 << 24, ZeroDefault: true, NegativeNone: true}
	MaxRequestBytes     = Setting[int]{Name: "max-request-bytes", Default: 4 << 20, Min: 1 << 10, Max: 1 << 30}
	MaxFactBytes        = Setting[int]{Name: "max-fact-bytes", Default: 64 << 10, Min: 1 << 10, Max: 1 << 30}
	MaxDataDepth        = Setting[int]{Name: "max-data-depth", Default: 32, Min: 1, Max: 100}
	MaxRingBytes        = Setting[int64]{Name: "max-ring-bytes", Default: 256 << 20, Min: 1 << 20, Max: 1 << 40}
	MaxStateBytes       = Setting[int64]{Name: "max-state-bytes", Default: 64 << 20, Min: 1 << 20, Max: 1 << 40}
	StateRebuild        = Setting[int]{Name: "state-rebuild", Default: 100000, Min: 1, Max: 1 << 24} // never less than the window
)

// One client's share (package limit). The publish rate is far above what
// a normal publisher sends, far below what turns the ring over in a
// second; the byte burst is the default largest request, and at the byte
// rate one client alone takes about a minute to turn the default ring
// over when every face caches an encoding of each event, about four
// minutes when none does (docs/limits.md).
var (
	MaxStreamsPerClient = Setting[int]{Name: "max-streams-per-client", Default: 64, Min: 1, Max: 1 << 20, NegativeNone: true}
	PublishRate         = Setting[float64]{Name: "publish-rate", Default: 2000, Min: 0.001, Max: 1e7, NegativeNone: true}
	PublishBurst        = Setting[int]{Name: "publish-burst", Default: 4000, Min: 1, Max: 1 << 24}
	PublishByteRate     = Setting[int64]{Name: "publish-byte-rate", Default: 1 << 20, Min: 1, Max: 1 << 40, NegativeNone: true}
	PublishByteBurst    = Setting[int64]{Name: "publish-byte-burst", Default: 4 << 20, Min: 1 << 10, Max: 1 << 40}
)

// Connections and HTTP (the server's edge).
var (
	MaxConns          = Setting[int]{Name: "max-conns", DefaultIs: "80% of the open-file limit", Min: 16, Max: 1 << 24, NegativeNone: true}
	MaxConnsPerClient = Setting[int]{Name: "max-conns-per-client", DefaultIs: "a quarter of --max-conns", Min: 1, Max: 1 << 24, ZeroDefault: true, NegativeNone: true}
	IdleTimeout       = Setting[time.Duration]{Name: "idle-timeout", Default: 2 * time.Minute, Min: time.Second, Max: 24 * time.Hour, ZeroDefault: true}
	ReadTimeout       = Setting[time.Duration]{Name: "read-timeout", Default: 30 * time.Second, Min: 100 * time.Millisecond, Max: time.Hour, ZeroDefault: true}
	WriteTimeout      = Setting[time.Duration]{Name: "write-timeout", Default: 10 * time.Second, Min: 10 * time.Millisecond, Max: time.Hour, ZeroDefault: true}
	MaxH2Streams      = Setting[int]{Name: "max-h2-streams", Default: 250, Min: 1, Max: 1 << 20}
	MaxH2Resets       = Setting[int]{Name: "max-h2-resets", Default: 200, Min: 1, Max: 1 << 20, NegativeNone: true}
	H2ResetPenalty    = Setting[time.Duration]{Name: "h2-reset-penalty", Default: 10 * time.Second, Min: time.Second, Max: 10 * time.Minute, ZeroDefault: true, NegativeNone: true}
)

// The server's life (package app).
var (
	DemoInterval  = Setting[time.Duration]{Name: "demo-interval", Default: time.Second, Min: 10 * time.Millisecond, Max: time.Hour, ZeroDefault: true}
	ShutdownDelay = Setting[time.Duration]{Name: "shutdown-delay", Default: 0, Min: 0, Max: time.Hour} // 0: drain at once
	ShutdownGrace = Setting[time.Duration]{Name: "shutdown-grace", Default: 5 * time.Second, Min: 10 * time.Millisecond, Max: time.Hour, ZeroDefault: true}
)

// A stream ringcast creates in NATS JetStream (package natslog). Its
// duplicate window is DedupeWindow. It starts bounded, in bytes and in age
// (docs/limits.md, "The durable store"): a week of commits, at most 1 GiB
// of them; a negative value lifts a bound (package app logs it at WARN).
var (
	NATSReplicas = Setting[int]{Name: "nats-replicas", Default: 1, Min: 1, Max: 3, ZeroDefault: true} // 1 or 3
	NATSMaxBytes = Setting[int64]{Name: "nats-max-bytes", Default: 1 << 30, Min: 1 << 10, Max: 1 << 50, ZeroDefault: true, NegativeNone: true}
	NATSMaxAge   = Setting[time.Duration]{Name: "nats-max-age", Default: 7 * 24 * time.Hour, Min: time.Second, Max: 10 * 365 * 24 * time.Hour, ZeroDefault: true, NegativeNone: true}
	NATSMaxMsgs  = Setting[int64]{Name: "nats-max-msgs", Default: 0, Min: 1, Max: 1 << 50, ZeroDefault: true} // 0: none
)

// All is every setting, in docs/limits.md's order: one row per numeric
// and duration flag of serve.
var All = []Row{
	Window.Row(), Heartbeat.Row(), Coalesce.Row(), Lease.Row(), WriteTimeout.Row(),
	StateKeys.Row(), DedupeWindow.Row(), DedupeKeys.Row(), DedupeKeysPerClient.Row(),
	MaxRequestBytes.Row(), MaxFactBytes.Row(), MaxDataDepth.Row(), MaxRingBytes.Row(), MaxStateBytes.Row(),
	MaxStreamsPerClient.Row(), PublishRate.Row(), PublishBurst.Row(), PublishByteRate.Row(), PublishByteBurst.Row(),
	MaxConns.Row(), MaxConnsPerClient.Row(), IdleTimeout.Row(), ReadTimeout.Row(),
	MaxH2Streams.Row(), MaxH2Resets.Row(), H2ResetPenalty.Row(),
	DemoInterval.Row(), ShutdownDelay.Row(), ShutdownGrace.Row(),
	NATSReplicas.Row(), NATSMaxBytes.Row(), NATSMaxAge.Row(), NATSMaxMsgs.Row(),
	StateRebuild.Row(),
}
