package hub

import "time"

// Outcome classifies how a subscribe started. Metrics keep them apart so a
// too-short window (too_old) shows as its own signal, distinct from new
// subscribers and from restarts (epoch_mismatch).
type Outcome string

// The subscribe outcomes.
const (
	OutcomeNew             Outcome = "new"               // since_seq 0 / no Last-Event-ID
	OutcomeResumed         Outcome = "resumed"           // served from the cursor
	OutcomeTooOld          Outcome = "too_old"           // the cursor's next event left the ring
	OutcomeAhead           Outcome = "ahead"             // the cursor is beyond head
	OutcomeEpochMismatch   Outcome = "epoch_mismatch"    // another instance's cursor
	OutcomeFactOutOfRange  Outcome = "fact_out_of_range" // since_fact names no remaining fact
	OutcomeMalformedCursor Outcome = "malformed_cursor"  // a cursor that does not parse (SSE)
	OutcomeCommitMismatch  Outcome = "commit_mismatch"   // a cursor whose fingerprint is not the commit's at its seq
)

// Observer receives the hub's counts; the metrics package implements it.
// Methods are called on publish and stream goroutines, never under the hub
// lock, and must be cheap and safe for concurrent use.
type Observer interface {
	// Subscribed is called once per stream with its face and outcome.
	Subscribed(face string, outcome Outcome)
	// StreamStarted and StreamEnded bracket every stream.
	StreamStarted(face string)
	StreamEnded(face string)
	// Lagged is called when a live stream is cut for falling behind.
	Lagged(face string)
	// Published is called per appended commit with the time spent appending.
	Published(facts int, took time.Duration)
	// Delivered is called once per delivered batch with the age of its
	// newest event when written; live is false for batches replayed before
	// the stream's CaughtUp (catch-up from a cursor, or up to an until
	// bound), true for those after it.
	Delivered(face string, live bool, age time.Duration)
}

type nopObserver struct{}

func (nopObserver) Subscribed(string, Outcome)            {}
func (nopObserver) StreamStarted(string)                  {}
func (nopObserver) StreamEnded(string)                    {}
func (nopObserver) Lagged(string)                         {}
func (nopObserver) Published(int, time.Duration)          {}
func (nopObserver) Delivered(string, bool, time.Duration) {}
