package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary serve as idlebench's worker processes: the
// coordinator runs os.Executable with -worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString("worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeServer speaks the part of ringcast's SSE face idlebench reads: GET
// /events sends caught-up and then a heartbeat every interval; a Publish
// is sent to every stream as a commit carrying its data.
type fakeServer struct {
	interval time.Duration
	max      int // streams served; past it, a 429 (0: no bound)
	mu       sync.Mutex
	served   int // /events requests
	conns    []net.Conn
	from     map[string]int // streams per source address
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/events":
		f.mu.Lock()
		over := f.max > 0 && f.served >= f.max
		f.served++
		f.mu.Unlock()
		if over {
			http.Error(w, "resource_exhausted: over the fake's bound", http.StatusTooManyRequests)
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.from[host]++
		f.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nretry: 1000\n\nevent: caught-up\ndata: {}\n\n")
		go func() {
			for {
				time.Sleep(f.interval)
				if _, err := io.WriteString(c, ": heartbeat head=0 oldest=0\n\n"); err != nil {
					return
				}
			}
		}()
	case "/ringcast.v1.EventService/Publish":
		var req struct {
			Facts []struct {
				Data json.RawMessage `json:"data"`
			} `json:"facts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Facts) != 1 {
			http.Error(w, "bad publish", http.StatusBadRequest)
			return
		}
		frame := []byte("id: 1\nevent: commit\ndata: {\"facts\":[{\"data\":" + string(req.Facts[0].Data) + "}]}\n\n")
		f.mu.Lock()
		for _, c := range f.conns {
			_, _ = c.Write(frame)
		}
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{"seq":"1"}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
}

// TestStreamsFromSeveralProcessesAndAddresses: 50 streams over two worker
// processes and three source addresses all open, all receive the one
// commit and their heartbeats, and the report counts them.
func TestStreamsFromSeveralProcessesAndAddresses(t *testing.T) {
	f := &fakeServer{interval: 100 * time.Millisecond, from: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	defer f.close()
	var out bytes.Buffer
	var errs syncBuffer // the workers' stderr too, copied on goroutines of their own
	err := run([]string{"-server", srv.URL, "-streams", "50", "-procs", "2", "-sources", "3",
		"-heartbeat", "100ms", "-hold", "500ms", "-settle", "0", "-timeout", "2m"}, strings.NewReader(""), &out, &errs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("result %q: %v", out.String(), err)
	}
	if res.Opened != 50 || res.Failed != 0 || res.CommitReached != 50 || res.StreamsBeaten != 50 || res.Ended != 0 {
		t.Fatalf("result %+v, want 50 streams open, reached by the commit and beaten", res)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		if f.from[a] == 0 {
			t.Errorf("no stream from %s: %v", a, f.from)
		}
	}
}

// TestTurnedAwayStreamsSayWhy: streams the server refuses are counted as
// failed, with the refusal's status and reason, and the others are
// measured as usual.
func TestTurnedAwayStreamsSayWhy(t *testing.T) {
	f := &fakeServer{interval: 100 * time.Millisecond, max: 7, from: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	defer f.close()
	var out bytes.Buffer
	var errs syncBuffer
	err := run([]string{"-server", srv.URL, "-streams", "10", "-heartbeat", "100ms", "-hold", "300ms", "-settle", "0", "-timeout", "2m"},
		strings.NewReader(""), &out, &errs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("result %q: %v", out.String(), err)
	}
	if res.Opened != 7 || res.Failed != 3 || res.CommitReached != 7 ||
		!strings.Contains(res.FirstError, "429 Too Many Requests") || !strings.Contains(res.FirstError, "over the fake's bound") {
		t.Fatalf("result %+v, want 7 open and 3 failed with the 429's reason", res)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOnlyLoopback: a server or a source address outside 127.0.0.0/8 is
// refused before anything is opened.
func TestOnlyLoopback(t *testing.T) {
	for _, args := range [][]string{
		{"-server", "http://10.0.0.1:8080"},
		{"-server", "http://example.com:8080"},
		{"-server", "https://127.0.0.1:8080"},
		{"-server", "http://[::1]:8080"},
		{"-worker", "-server", "http://127.0.0.1:1", "-from", "192.168.1.2"},
	} {
		var out, errs bytes.Buffer
		if err := run(args, strings.NewReader(""), &out, &errs); err == nil || !strings.Contains(err.Error(), "127.0.0.0/8") && !strings.Contains(err.Error(), "http://") {
			t.Errorf("%q: %v, want a refusal naming loopback", args, err)
		}
	}
}
