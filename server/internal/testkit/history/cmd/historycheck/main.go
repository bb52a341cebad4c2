// Command historycheck checks a fault test's history, written as JSON lines
// by a test suite outside Go (clients/ts/test/faults.test.ts), with
// server/internal/testkit/history — the checker the Go fault tests use:
//
//	historycheck [--complete] history.jsonl
//
// One object a line, in the order things happened (per consumer, the order
// it was given them); epochs as 16 lower-case hex digits, seqs as numbers:
//
//	{"kind":"consumer","consumer":"grpc-0"}
//	{"kind":"published","epoch":"592d066f7d68b122","seq":65,"facts":3}
//	{"kind":"fact","consumer":"grpc-0","epoch":"592d066f7d68b122","seq":65,"index":0}
//	{"kind":"resync","consumer":"grpc-0","epoch":"8c01c25dfcf75b03","reason":"REASON_EPOCH_MISMATCH","requested":65,"oldest":1,"head":3}
//	{"kind":"restart","consumer":"grpc-0"}
//
// With --complete every consumer must also have been given every fact of
// the epoch it ended in. It prints the check's summary and exits 0, or
// prints the failure (the consumer, the rule and an excerpt of its
// history) and exits 1; unreadable input exits 2.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ringcast/ringcast/server/internal/testkit/history"
)

func main() {
	fs := flag.NewFlagSet("historycheck", flag.ContinueOnError)
	complete := fs.Bool("complete", false, "every consumer must have been given every fact of the epoch it ended in")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: historycheck [--complete] history.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "historycheck:", err)
		os.Exit(2)
	}
	defer f.Close()
	h, err := read(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "historycheck: %s: %v\n", fs.Arg(0), err)
		os.Exit(2)
	}
	sum, err := h.Check(*complete)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(sum)
}

// line is one record of the history file.
type line struct {
	Kind      string `json:"kind"`
	Consumer  string `json:"consumer"`
	Epoch     string `json:"epoch"`
	Seq       uint64 `json:"seq"`
	Facts     int    `json:"facts"`
	Index     uint32 `json:"index"`
	Reason    string `json:"reason"`
	Requested uint64 `json:"requested"`
	Oldest    uint64 `json:"oldest"`
	Head      uint64 `json:"head"`
}

// read builds a History from JSON lines.
func read(r io.Reader) (*history.History, error) {
	h := history.New()
	consumers := map[string]*history.Consumer{}
	consumer := func(name string) (*history.Consumer, error) {
		if name == "" {
			return nil, errors.New(`no "consumer"`)
		}
		c, ok := consumers[name]
		if !ok {
			c = h.Consumer(name)
			consumers[name] = c
		}
		return c, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l line
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if err := apply(h, consumer, l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
	}
	return h, sc.Err()
}

func apply(h *history.History, consumer func(string) (*history.Consumer, error), l line) error {
	epoch := func() (uint64, error) {
		if len(l.Epoch) != 16 {
			return 0, fmt.Errorf("epoch %q: want 16 hex digits", l.Epoch)
		}
		return strconv.ParseUint(l.Epoch, 16, 64)
	}
	if l.Kind == "published" {
		e, err := epoch()
		if err != nil {
			return err
		}
		h.Published(e, l.Seq, l.Facts)
		return nil
	}
	c, err := consumer(l.Consumer)
	if err != nil {
		return err
	}
	switch l.Kind {
	case "consumer":
	case "restart":
		c.Restarted()
	case "fact", "resync":
		e, err := epoch()
		if err != nil {
			return err
		}
		if l.Kind == "fact" {
			c.Fact(e, l.Seq, l.Index)
		} else {
			c.Resynced(e, l.Reason, l.Requested, l.Oldest, l.Head)
		}
	default:
		return fmt.Errorf("kind %q: want published, consumer, fact, resync or restart", l.Kind)
	}
	return nil
}
