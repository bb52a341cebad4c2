package natslog

import (
	"sync/atomic"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// DirectGets is how many direct get requests l has sent and how many
// messages they returned.
func (l *Log) DirectGets() (requests, msgs uint64) {
	return l.directGets.Load(), l.directMsgs.Load()
}

// DropTakes makes every nth commit l hands its hub's intake go untaken, as
// when the hub holds too many out of order: Follow must bring them.
func (l *Log) DropTakes(n int) {
	in := l.intake.Load()
	w := *in
	var k atomic.Int64
	w.Take = func(ev *hub.Event) bool {
		if k.Add(1)%int64(n) == 0 {
			return false
		}
		return in.Take(ev)
	}
	l.intake.Store(&w)
}

// Unsure tells l an append failed without JetStream's answer.
func (l *Log) Unsure(err error) { l.unsure(err) }
