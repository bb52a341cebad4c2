package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
)

const publishSynopsis = `publish [flags] [FACT…]

Publishes one commit. Each FACT is a JSON object in Connect JSON form, e.g.
  '{"topic":"gauges/ribble/g-014","type":"gauge.level","key":"g-014","data":{"level_m":1.2}}'
With no FACT arguments, facts are read from stdin: JSON objects one after
another, or one JSON array of them. Prints the receipt as JSON on one line:
  {"seq":12,"instanceEpoch":"7417829060837277239","epoch":"66f16c3abfc67e37","eventTime":"…","duplicate":false}
seq is a JSON number, as ringcast tail prints it; the epoch is given both
ways: instanceEpoch as Connect JSON writes it (a decimal string), epoch as
logs, metrics and SSE ids do (16 hex digits). Every field is present, false
ones included. Flags may also follow the facts:
  ringcast publish '{…}' --server http://127.0.0.1:8080

With --lines, every line of stdin is a commit of its own: a fact object, a
JSON array of facts, or a whole request ({"facts":[…],"idempotencyKey":"…"}).
Lines are sent in batches (PublishBatch, up to --batch commits per request):
whatever has arrived while the previous request was in flight goes in the
next one, so a fast producer is batched and a slow one is not delayed. Prints
one receipt per line, in order. A bad line or a failed request stops the
command; the lines before it were published (their receipts are printed),
none after it.`

func publishCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("publish", publishSynopsis, stderr)
	cf.register(fs)
	key := fs.String("idempotency-key", "", "make the publish safe to retry: a repeat within the dedupe window returns the original receipt")
	lines := fs.Bool("lines", false, "read one commit per stdin line and publish them in batches (PublishBatch)")
	batch := fs.Int("batch", 256, fmt.Sprintf("with --lines: most commits per request (1..%d)", hub.MaxCommitsPerBatch))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *lines {
		if fs.NArg() > 0 || *key != "" {
			return errors.New("--lines reads commits from stdin: no FACT arguments or --idempotency-key (put idempotencyKey in a line)")
		}
		if *batch < 1 || *batch > hub.MaxCommitsPerBatch {
			return fmt.Errorf("--batch %d: want 1..%d", *batch, hub.MaxCommitsPerBatch)
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		defer c.CloseIdleConnections()
		if err := cf.reach(ctx, c, stderr, "publish"); err != nil {
			return err
		}
		return publishLines(ctx, c, stdin, stdout, *batch, cf.explain)
	}
	var facts []*ringcastv1.Fact
	var err error
	if fs.NArg() > 0 {
		for i, a := range fs.Args() {
			f := &ringcastv1.Fact{}
			if err := protojson.Unmarshal([]byte(a), f); err != nil {
				return fmt.Errorf("fact %d: %w", i+1, err)
			}
			facts = append(facts, f)
		}
	} else if facts, err = readFacts(stdin); err != nil {
		return err
	}
	if len(facts) == 0 {
		return errors.New("no facts given (pass JSON objects as arguments or on stdin)")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	if err := cf.reach(ctx, c, stderr, "publish"); err != nil {
		return err
	}
	receipt, err := c.Publish(ctx, facts, *key)
	if err != nil {
		return cf.explain(err)
	}
	b, err := marshalJSON(receipt)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// readFacts reads a JSON array of facts or a sequence of JSON objects.
func readFacts(r io.Reader) ([]*ringcastv1.Fact, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
	} else {
		dec := json.NewDecoder(strings.NewReader(string(data)))
		for {
			var m json.RawMessage
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			raws = append(raws, m)
		}
	}
	facts := make([]*ringcastv1.Fact, 0, len(raws))
	for i, raw := range raws {
		f := &ringcastv1.Fact{}
		if err := protojson.Unmarshal(raw, f); err != nil {
			return nil, fmt.Errorf("fact %d: %w", i+1, err)
		}
		facts = append(facts, f)
	}
	return facts, nil
}
