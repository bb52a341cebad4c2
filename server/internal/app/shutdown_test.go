package app_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestShutdownDoesNotWaitForUnusedConnections mimics what Node's fetch
// (undici) leaves behind when a streaming response is aborted over
// HTTP/1.1: it destroys the stream's socket and straight away opens a new
// connection to the same origin that never sends a request. net/http's
// Shutdown treats such a connection (StateNew) as busy until it is 5 s
// old, and closes it only then, long after the idle ones: shutdown used to
// wait that long (or the whole grace period, if shorter). Now the server
// closes it before shutdown waits on anything — before the connection of
// a live stream, which still gets ServerStatus(DRAINING) and an OK end
// first, and which net/http's Shutdown closes once idle.
func TestShutdownDoesNotWaitForUnusedConnections(t *testing.T) {
	cfg := ringtest.Config()
	cfg.ShutdownGrace = time.Minute
	s, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &closeOrderListener{Listener: inner, closed: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	addr := inner.Addr().String()

	aborted, _ := subscribeRaw(t, addr)
	aborted.Close() // the client aborts its stream: undici destroys the socket
	unused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	// Connections are accepted in order, so once this stream answers the
	// server holds the unused connection too.
	live, liveBody := subscribeRaw(t, addr)
	defer live.Close()
	for deadline := time.Now().Add(60 * time.Second); s.Hub.Subscribers() != 1; {
		if time.Now().After(deadline) { // a hang guard only
			t.Fatalf("subscribers %d, want 1 (the live stream)", s.Hub.Subscribers())
		}
		time.Sleep(5 * time.Millisecond)
	}

	cancel()
	rest, err := readFrames(liveBody)
	if err != nil {
		t.Fatalf("live stream: %v (got %q)", err, rest)
	}
	if len(rest) < 2 || !strings.Contains(rest[len(rest)-2], "SERVER_STATE_DRAINING") || rest[len(rest)-1] != "end {}" {
		t.Fatalf("live stream got %q, want ServerStatus(DRAINING) then an OK end", rest)
	}
	if err := ringtest.Wait(t, done, time.Minute, "Serve to return"); err != nil { // a hang guard only
		t.Fatalf("Serve: %v", err)
	}
	unused.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang guard only
	if n, err := unused.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("unused connection: read %d, %v; want it closed by the server", n, err)
	}
	unusedAt, liveAt := ln.closedAt(unused.LocalAddr()), ln.closedAt(live.LocalAddr())
	if unusedAt == 0 || liveAt == 0 || unusedAt > liveAt {
		t.Fatalf("the server closed the unused connection %s, the live stream's %s (0: never); want the unused one first: shutdown waited on it",
			ordinal(unusedAt), ordinal(liveAt))
	}
}

// closeOrderListener numbers, in order, the first Close of each
// connection it accepted, by the connection's remote address.
type closeOrderListener struct {
	net.Listener
	mu     sync.Mutex
	n      int64
	closed map[string]int64
}

func (l *closeOrderListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &closeOrderConn{Conn: c, l: l}, nil
}

func (l *closeOrderListener) closedAt(remote net.Addr) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed[remote.String()]
}

type closeOrderConn struct {
	net.Conn
	l *closeOrderListener
}

func (c *closeOrderConn) Close() error {
	c.l.mu.Lock()
	if k := c.RemoteAddr().String(); c.l.closed[k] == 0 {
		c.l.n++
		c.l.closed[k] = c.l.n
	}
	c.l.mu.Unlock()
	return c.Conn.Close()
}

func ordinal(n int64) string {
	if n == 0 {
		return "never"
	}
	return fmt.Sprintf("as close #%d", n)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// subscribeRaw opens a Connect SubscribeEvents stream over a plain HTTP/1.1
// connection and reads its first message.
func subscribeRaw(t *testing.T, addr string) (net.Conn, io.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("{}")
	env := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(env[1:5], uint32(len(msg)))
	copy(env[5:], msg)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/connect+json\r\nContent-Length: %d\r\n\r\n%s",
		ringcastv1connect.EventServiceSubscribeEventsProcedure, addr, len(env), env)
	c.SetReadDeadline(time.Now().Add(60 * time.Second)) // a hang guard only
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		c.Close()
		t.Fatalf("subscribe: HTTP %d", res.StatusCode)
	}
	first, err := readFrame(res.Body)
	if err != nil {
		c.Close()
		t.Fatalf("subscribe: first message: %v", err)
	}
	if strings.HasPrefix(first, "end ") {
		c.Close()
		t.Fatalf("subscribe: stream ended at once: %s", first)
	}
	return c, res.Body
}

// readFrame reads one Connect envelope: a message, or "end " and the
// end-of-stream JSON.
func readFrame(r io.Reader) (string, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	if hdr[0]&0x02 != 0 {
		return "end " + string(body), nil
	}
	return string(body), nil
}

// readFrames reads the rest of a stream, up to its end message, then
// checks that the body ends there.
func readFrames(r io.Reader) ([]string, error) {
	var got []string
	for {
		f, err := readFrame(r)
		if err != nil {
			return got, err
		}
		got = append(got, f)
		if strings.HasPrefix(f, "end ") {
			if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				return got, fmt.Errorf("after the end message: %d bytes, %v", n, err)
			}
			return got, nil
		}
	}
}
