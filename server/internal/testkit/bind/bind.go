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
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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

// NATS starts a nats-server in process and waits until it accepts
// connections. Unlike natslog.StartServer it returns at once when a
// listener cannot be opened (InUse tells an address in use), having shut
// the server down; opts.StoreDir, when set, must be an absolute path.
func NATS(opts *server.Options) (*server.Server, error) {
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats-server: %w", err)
	}
	fatal := &fatalLog{failed: make(chan struct{})}
	ns.SetLogger(fatal, false, false)
	go ns.Start()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ns.ReadyForConnections(100 * time.Millisecond) {
			return ns, nil
		}
		select {
		case <-fatal.failed:
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, fmt.Errorf("start nats-server: %s", fatal.msg)
		default:
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			ns.WaitForShutdown()
			return nil, errors.New("start nats-server: not ready after 30s")
		}
	}
}

// fatalLog is a nats-server logger that keeps the first fatal message (a
// listener that could not be opened) and drops everything else.
type fatalLog struct {
	once   sync.Once
	failed chan struct{} // closed once msg is set
	msg    string
}

// Fatalf records the first fatal message; the server goes on running
// until it is shut down.
func (l *fatalLog) Fatalf(format string, v ...any) {
	l.once.Do(func() {
		l.msg = fmt.Sprintf(format, v...)
		close(l.failed)
	})
}

// Noticef drops the message.
func (*fatalLog) Noticef(string, ...any) {}

// Warnf drops the message.
func (*fatalLog) Warnf(string, ...any) {}

// Errorf drops the message.
func (*fatalLog) Errorf(string, ...any) {}

// Debugf drops the message.
func (*fatalLog) Debugf(string, ...any) {}

// Tracef drops the message.
func (*fatalLog) Tracef(string, ...any) {}
