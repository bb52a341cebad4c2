package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// maxLineBytes bounds one stdin line of `publish --lines`.
const maxLineBytes = 16 << 20

// line is one parsed stdin line: a commit, or why it is not one.
type line struct {
	n      int
	commit *ringcastv1.PublishRequest
	err    error
}

// publishLines publishes every stdin line as a commit, in batches of up to
// size commits, and prints one receipt per line. Lines are read on their own
// goroutine; each request takes everything read meanwhile. The first
// request's error goes through explain (clientFlags.explain).
func publishLines(ctx context.Context, c *ringcast.Client, stdin io.Reader, stdout io.Writer, size int, explain func(error) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan line, size)
	go readLines(ctx, stdin, lines)
	out := bufio.NewWriter(stdout)
	pending := make([]*ringcastv1.PublishRequest, 0, size)
	first := 0    // line number of pending[0]
	sent := false // a request was sent
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		rs, err := c.PublishBatch(ctx, pending)
		if err != nil && !sent {
			err = explain(err)
		}
		sent = true
		if err != nil {
			return fmt.Errorf("lines %d..%d (not published): %w", first, first+len(pending)-1, err)
		}
		for _, r := range rs {
			b, err := marshalJSON(r)
			if err != nil {
				return err
			}
			out.Write(b)
			out.WriteByte('\n')
		}
		pending = pending[:0]
		return out.Flush()
	}
	for {
		l, open := <-lines
		if !open {
			return nil
		}
		for {
			if l.err != nil {
				if err := flush(); err != nil {
					return err
				}
				return l.err
			}
			if len(pending) == 0 {
				first = l.n
			}
			pending = append(pending, l.commit)
			if len(pending) == size {
				break
			}
			more := false
			select { // take what has arrived, without waiting for more
			case l, open = <-lines:
				more = open
			default:
			}
			if !more {
				break
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if !open {
			return nil
		}
	}
}

// readLines parses stdin line by line onto lines, skipping blank lines, and
// closes it at the end of input or after the first error.
func readLines(ctx context.Context, r io.Reader, lines chan<- line) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	send := func(l line) bool {
		select {
		case lines <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		commit, err := parseCommit(b)
		if err != nil {
			send(line{err: fmt.Errorf("line %d: %w", n, err)})
			return
		}
		if !send(line{n: n, commit: commit}) {
			return
		}
	}
	if err := sc.Err(); err != nil {
		send(line{err: fmt.Errorf("stdin after line %d: %w", n, err)})
	}
}

// parseCommit reads one line: a fact, an array of facts, or a request.
func parseCommit(b []byte) (*ringcastv1.PublishRequest, error) {
	if b[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, err
		}
		req := &ringcastv1.PublishRequest{}
		for i, raw := range raws {
			f := &ringcastv1.Fact{}
			if err := protojson.Unmarshal(raw, f); err != nil {
				return nil, fmt.Errorf("fact %d: %w", i+1, err)
			}
			req.Facts = append(req.Facts, f)
		}
		return req, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	if _, ok := probe["facts"]; ok {
		req := &ringcastv1.PublishRequest{}
		if err := protojson.Unmarshal(b, req); err != nil {
			return nil, err
		}
		return req, nil
	}
	f := &ringcastv1.Fact{}
	if err := protojson.Unmarshal(b, f); err != nil {
		return nil, err
	}
	return &ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{f}}, nil
}
