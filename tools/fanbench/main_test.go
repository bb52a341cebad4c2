package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringcast/ringcast/tools/internal/benchkit"
)

func TestParseDefaults(t *testing.T) {
	c, err := parse([]string{"-servers", "http://127.0.0.1:1/, http://127.0.0.2:2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.servers) != 2 || c.servers[0] != "http://127.0.0.1:1" || c.servers[1] != "http://127.0.0.2:2" {
		t.Fatalf("servers %q", c.servers)
	}
	if c.subscribers != 100 || c.rate != 5000 || c.duration != 10*time.Second || c.publishers != 1 || c.maxBatch != 1024 || c.commits() != 50000 {
		t.Fatalf("defaults %+v", c)
	}
}

func TestParseRefuses(t *testing.T) {
	s := []string{"-servers", "http://127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-servers is required"},
		{[]string{"-servers", "http://10.0.0.1:80"}, "not a 127.0.0.0/8 address"},
		{[]string{"-servers", "http://localhost:80"}, "not a 127.0.0.0/8 address"},
		{[]string{"-servers", "https://127.0.0.1:80"}, "want http://"},
		{[]string{"-servers", "http://127.0.0.1:80/x"}, "want http://"},
		{[]string{"-servers", "http://127.0.0.1:1,"}, "want http://"},
		{append(s, "-subscribers", "0"), "-subscribers must be"},
		{append(s, "-rate", "0"), "-rate must be"},
		{append(s, "-duration", "0s"), "-duration must be positive"},
		{append(s, "-publish-to", "1"), "-publish-to must be 0 to 0"},
		{append(s, "-publishers", "0"), "-publishers must be"},
		{append(s, "-max-batch", "1025"), "-max-batch must be 1 to 1024"},
		{append(s, "-size", "-1"), "-size must be"},
		{append(s, "-drain", "0s"), "must be positive"},
		{append(s, "-rate", "1", "-duration", "10ms"), "less than one commit"},
		{append(s, "-rate", "1000000", "-duration", "10m"), "more than 50000000"},
		{append(s, "extra"), `unexpected argument "extra"`},
		{append(s, "-rate", "x"), "invalid value"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestPackageCommentListsEveryFlag keeps the package comment's flag list
// in step with the flag set.
func TestPackageCommentListsEveryFlag(t *testing.T) {
	var c config
	var servers string
	missing, err := benchkit.UndocumentedFlags("main.go", flags(&c, &servers))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range missing {
		t.Errorf("the package comment does not list -%s", name)
	}
}

func TestParseSeq(t *testing.T) {
	for in, want := range map[string]uint64{
		"8c01c25dfcf75b03-42\n":          42,
		"8c01c25dfcf75b03-42-5d41402a\n": 42,
		"nonsense\n":                     0,
		"8c01c25dfcf75b03-x\n":           0,
	} {
		if got := parseSeq([]byte(in)); got != want {
			t.Errorf("parseSeq(%q) = %d, want %d", in, got, want)
		}
	}
}

// fakeStream is the part of a ringcast stream fanbench uses, shared by
// fake replicas: PublishBatch appends commits in order, and every SSE
// stream of every replica gets each one.
type fakeStream struct {
	mu      sync.Mutex
	seq     int
	streams []chan []byte
}

func (f *fakeStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/events":
		ch := make(chan []byte, 1<<16)
		f.mu.Lock()
		f.streams = append(f.streams, ch)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: caught-up\ndata: {\"caughtUp\":{}}\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case b := <-ch:
				w.Write(b)
				w.(http.Flusher).Flush()
			}
		}
	case "/ringcast.v1.EventService/PublishBatch":
		var req struct {
			Commits []struct {
				Facts []struct {
					Data json.RawMessage `json:"data"`
				} `json:"facts"`
			} `json:"commits"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		for _, c := range req.Commits {
			f.seq++
			var b bytes.Buffer
			fmt.Fprintf(&b, "id: 00000000000000aa-%d\nevent: commit\ndata: {\"commit\":{\"facts\":[{\"data\":%s}]}}\n\n", f.seq, c.Facts[0].Data)
			for _, ch := range f.streams {
				ch <- b.Bytes()
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "{}")
	default:
		http.NotFound(w, r)
	}
}

func TestRunCountsEveryReplicasDeliveries(t *testing.T) {
	f := &fakeStream{}
	a, b := httptest.NewServer(f), httptest.NewServer(f)
	defer a.Close()
	defer b.Close()
	var out bytes.Buffer
	err := run([]string{"-servers", a.URL + "," + b.URL, "-subscribers", "5", "-rate", "2000", "-duration", "100ms",
		"-max-batch", "7", "-drain", "5s", "-timeout", "30s"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Publish.Commits != 200 || res.Deliveries != 1000 || res.Expected != 1000 || res.Lost != 0 || res.Duplicated != 0 || res.OutOfOrder != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(res.PerReplica) != 2 || res.PerReplica[0].Subscribers != 3 || res.PerReplica[1].Subscribers != 2 ||
		res.PerReplica[0].Deliveries != 600 || res.PerReplica[1].Deliveries != 400 {
		t.Fatalf("per replica %+v", res.PerReplica)
	}
	if res.Publish.Requests < 200/7 {
		t.Fatalf("%d requests for 200 commits of at most 7 each", res.Publish.Requests)
	}
}
