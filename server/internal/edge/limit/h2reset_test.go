package limit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// chunkConn serves its bytes in reads of at most size bytes.
type chunkConn struct {
	net.Conn // nil: only Read and RemoteAddr are used
	r        *bytes.Reader
	size     int
}

func (c *chunkConn) Read(p []byte) (int, error)      { return c.r.Read(p[:min(len(p), c.size)]) }
func (c *chunkConn) SetReadDeadline(time.Time) error { return nil }
func (c *chunkConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4000}
}

func frame(dst []byte, typ byte, stream uint32, payload []byte) []byte {
	dst = append(dst, byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload)), typ, 0)
	dst = binary.BigEndian.AppendUint32(dst, stream)
	return append(dst, payload...)
}

// TestResetGuardCountsFramesSplitAcrossReads: frame headers are followed
// however the reads split them; the RST_STREAM past the bucket (a frozen
// clock: no refill) fails the next read with ENHANCE_YOUR_CALM and starts
// the penalty of a client cut once before. Payload bytes that look like RST_STREAM headers
// (inside DATA) are not counted.
func TestResetGuardCountsFramesSplitAcrossReads(t *testing.T) {
	// A DATA payload holding what would be an RST_STREAM header.
	fake := frame(nil, 0x3, 99, []byte{0, 0, 0, 8})
	in := []byte(h2Preface)
	in = frame(in, 0x4, 0, nil) // SETTINGS
	for i := range uint32(20) {
		s := 2*i + 1
		in = frame(in, 0x1, s, []byte("block"))
		in = frame(in, 0x0, s, fake)
		in = frame(in, 0x3, s, []byte{0, 0, 0, 8})
	}
	for _, size := range []int{1, 2, 7, 9, 13, 4096} {
		now := time.Unix(1000, 0)
		var counted []string
		l := New(Config{Observer: func(name string) { counted = append(counted, name) }})
		l.now = func() time.Time { return now }
		g := l.ResetGuard(10, time.Minute)
		g.cuts["ip:192.0.2.7"] = now // cut once already: this cut starts the penalty
		c := g.Watch(&chunkConn{r: bytes.NewReader(in), size: size})
		read, buf := 0, make([]byte, 64)
		var err error
		for err == nil {
			var n int
			n, err = c.Read(buf)
			read += n
		}
		if !errors.Is(err, errEnhanceYourCalm) {
			t.Fatalf("reads of %d bytes: %v, want ENHANCE_YOUR_CALM", size, err)
		}
		// The cut comes with the read that completes the 11th
		// RST_STREAM's header.
		perStream := 9 + 5 + 9 + len(fake) + 9 + 4
		if end := len(h2Preface) + 9 + 11*perStream - 4; read < end || read > end+size-1 {
			t.Fatalf("reads of %d bytes: cut after %d bytes, want right after the 11th RST_STREAM's header (%d)", size, read, end)
		}
		if len(counted) != 1 || counted[0] != H2Reset {
			t.Fatalf("counted %v, want one %s", counted, H2Reset)
		}
		if !g.penalised("ip:192.0.2.7") || g.penalised("ip:192.0.2.8") {
			t.Fatal("the client is not serving its penalty, or another is")
		}
		now = now.Add(time.Minute)
		if g.penalised("ip:192.0.2.7") {
			t.Fatal("the penalty outlived its time")
		}
	}
}

// TestResetGuardRefillsAndPassesHTTP1: resets within the rate pass for
// ever; a connection that does not begin with the preface is not followed.
func TestResetGuardRefillsAndPassesHTTP1(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Config{})
	l.now = func() time.Time { return now }
	g := l.ResetGuard(10, time.Minute)
	in := []byte(h2Preface)
	for i := range uint32(100) {
		in = frame(in, 0x3, 2*i+1, []byte{0, 0, 0, 8})
	}
	c := g.Watch(&chunkConn{r: bytes.NewReader(in), size: 13 * 10}) // ten RST_STREAMs a read
	for {
		_, err := c.Read(make([]byte, 4096))
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("resets at the rate: %v", err)
		}
		now = now.Add(time.Second)
	}
	body := bytes.Repeat(frame(nil, 0x3, 1, []byte{0, 0, 0, 8}), 100)
	req := append([]byte("POST / HTTP/1.1\r\nContent-Length: 1300\r\n\r\n"), body...)
	c = g.Watch(&chunkConn{r: bytes.NewReader(req), size: 7})
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("HTTP/1.1: %v", err)
	}
}

// rwConn reads in from its reader and keeps what is written; a read
// deadline set fails the reads after it.
type rwConn struct {
	net.Conn // nil: only the methods below are used
	r        *bytes.Reader
	written  bytes.Buffer
	late     bool
}

func (c *rwConn) Read(p []byte) (int, error) {
	if c.late {
		return 0, errors.New("i/o timeout")
	}
	return c.r.Read(p)
}
func (c *rwConn) Write(p []byte) (int, error)      { return c.written.Write(p) }
func (c *rwConn) SetReadDeadline(time.Time) error  { c.late = true; return nil }
func (c *rwConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4000} }
func (c *rwConn) SetWriteDeadline(time.Time) error { return nil }
func (c *rwConn) Close() error                     { return nil }

// TestResetGuardCountsServerResets: RST_STREAM frames the server writes on
// an HTTP/2 connection take from the same bucket as the client's, however
// the writes split them: past it (a frozen clock), the next read fails
// with ENHANCE_YOUR_CALM and the cut is counted once. Writes on an
// HTTP/1.1 connection are not followed.
func TestResetGuardCountsServerResets(t *testing.T) {
	var out []byte
	out = frame(out, 0x4, 0, nil) // SETTINGS
	for i := range uint32(20) {
		out = frame(out, 0x1, 2*i+1, []byte("headers"))
		out = frame(out, 0x3, 2*i+1, []byte{0, 0, 0, 1})
	}
	for _, size := range []int{1, 5, 9, 13, 4096} {
		now := time.Unix(1000, 0)
		var counted []string
		l := New(Config{Observer: func(name string) { counted = append(counted, name) }})
		l.now = func() time.Time { return now }
		g := l.ResetGuard(10, time.Minute)
		c := g.Watch(&rwConn{r: bytes.NewReader([]byte(h2Preface))})
		if _, err := io.ReadFull(c, make([]byte, len(h2Preface))); err != nil {
			t.Fatal(err)
		}
		for b := out; len(b) > 0; {
			k := min(len(b), size)
			if _, err := c.Write(b[:k]); err != nil {
				t.Fatal(err)
			}
			b = b[k:]
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, errEnhanceYourCalm) {
			t.Fatalf("writes of %d bytes: the next read: %v, want ENHANCE_YOUR_CALM", size, err)
		}
		if len(counted) != 1 || counted[0] != H2Reset {
			t.Fatalf("writes of %d bytes: counted %v, want one %s", size, counted, H2Reset)
		}
	}

	l := New(Config{})
	g := l.ResetGuard(10, time.Minute)
	c := g.Watch(&rwConn{r: bytes.NewReader([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))})
	if _, err := c.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		_, _ = c.Write(frame(nil, 0x3, 1, []byte{0, 0, 0, 1}))
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("HTTP/1.1 after writes that look like resets: %v, want EOF", err)
	}
}
