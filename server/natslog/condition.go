package natslog

import (
	"errors"
	"sync"
	"time"
)

// condition describes a failure of a request to JetStream by the store's
// condition (StoreError) and, when it is one (ErrStoreFull or
// ErrStoreUnavailable), records it for Condition. Other errors (a damaged
// or replaced log, a bad request) are returned as they are.
func (l *Log) condition(err error) error {
	err = StoreError(err)
	if errors.Is(err, ErrStoreFull) || errors.Is(err, ErrStoreUnavailable) {
		l.cond.set(err)
	}
	return err
}

// fullFor is how long a store found full is reported full without a
// commit stored meanwhile: then Condition says available again, so that a
// store that freed room is tried.
const fullFor = 10 * time.Second

// condState is the last condition a Log met.
type condState struct {
	mu   sync.Mutex
	last error // wraps ErrStoreFull or ErrStoreUnavailable; nil: neither
	at   time.Time
}

func (c *condState) set(e error) {
	c.mu.Lock()
	c.last, c.at = e, time.Now()
	c.mu.Unlock()
}

// ok records that a request succeeded: the store is available and had room
// for what was asked (a read does not clear full).
func (c *condState) ok(stored bool) {
	c.mu.Lock()
	if c.last != nil && (stored || !errors.Is(c.last, ErrStoreFull)) {
		c.last = nil
	}
	c.mu.Unlock()
}

// Condition reports whether the store is available and has room now, as
// the Log's requests found it: nil, or an error wrapping ErrStoreFull (a
// commit was refused for want of room in the last fullFor and none stored
// since) or ErrStoreUnavailable (the last request failed so: no quorum, no
// answer, no connection). A hub asks the Log's range about every second,
// so an unavailable store is noticed within about a second, and its return
// too. The message names the condition.
func (l *Log) Condition() error {
	l.cond.mu.Lock()
	defer l.cond.mu.Unlock()
	c := l.cond.last
	if c == nil || (errors.Is(c, ErrStoreFull) && time.Since(l.cond.at) > fullFor) {
		return nil
	}
	return c
}
