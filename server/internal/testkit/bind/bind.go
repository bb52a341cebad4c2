// Package bind starts test servers on ports they own. A port reserved by
// listening on port 0 and closing the listener, or freed by stopping a
// server, is free for anyone until it is bound again: an outgoing loopback
// connection of any process may take it as its source port meanwhile, and
// the start fails with "address already in use". A server that can bind a
// port of its own choosing should (port 0, or -1 for nats-server) and be
// asked for it; one that must come back on the same port (its clients
// resume at the same URL) starts through Again, which waits until the
// port is free again.
package bind

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Wait is how long Again waits for a port to be free again, and Poll how
// often it tries.
const (
	Wait = 15 * time.Second
	Poll = 150 * time.Millisecond
)

// InUse reports whether err says that the address to listen on is already
// in use (an error of this process, or one reported by another process).
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}

// Again calls start until it returns nil or an error other than an address
// in use, and returns that. While the address stays in use it tries again
// every Poll; after Wait it fails t, naming what.
func Again(t testing.TB, what string, start func() error) error {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		err := start()
		if !InUse(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the address is still in use after %v: %v", what, Wait, err)
		}
		time.Sleep(Poll)
	}
}
