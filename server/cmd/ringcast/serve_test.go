package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// TestServeLogsBindReadsEnvAndDrainsOnSIGTERM runs "ringcast serve" in
// process: it logs one line with the address and the epoch, takes flags
// from RINGCAST_* variables (a command-line flag winning), serves the
// publish and status commands, and on SIGTERM drains and exits 0.
func TestServeLogsBindReadsEnvAndDrainsOnSIGTERM(t *testing.T) {
	t.Setenv("RINGCAST_WINDOW", "77")
	t.Setenv("RINGCAST_DEMO", "false")
	t.Setenv("RINGCAST_ADDR", "127.0.0.1:1") // overridden by --addr below
	var stderr logbuf.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"serve", "--addr", "127.0.0.1:0", "--heartbeat", "1h"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	bound := regexp.MustCompile(`msg="ringcast serving" addr=(\S+) url=(\S+) epoch=([0-9a-f]{16})`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("no bind line; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
		m = bound.FindStringSubmatch(stderr.String())
	}
	url := m[2]

	var out, errOut bytes.Buffer
	if code := run([]string{"publish", "--server", url, `{"topic":"gauges/ribble/g-014","type":"gauge.note","data":{"text":"hi"}}`}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("publish: exit %d: %s", code, errOut.String())
	}
	var receipt struct {
		Seq           uint64
		InstanceEpoch string
	}
	if err := json.Unmarshal(out.Bytes(), &receipt); err != nil || receipt.Seq != 2 {
		t.Fatalf("publish receipt %q (%v), want seq 2", out.String(), err)
	}
	out.Reset()
	if code := run([]string{"status", "--server", url}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut.String())
	}
	if s := out.String(); !strings.Contains(s, `"window":77`) || !strings.Contains(s, `"headSeq":2`) {
		t.Fatalf("status %s: want window 77 from RINGCAST_WINDOW and head 2", s)
	}

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited %d after SIGTERM: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "msg=draining") {
		t.Fatalf("no drain logged: %s", stderr.String())
	}
}

func TestBadFlagsAndEnvAreUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--window", "lots"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
	t.Setenv("RINGCAST_HEARTBEAT", "soon")
	errOut.Reset()
	if code := run([]string{"serve"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "RINGCAST_HEARTBEAT") {
		t.Fatalf("bad env: exit %d, stderr %q", code, errOut.String())
	}
	if code := run([]string{"frobnicate"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
	errOut.Reset()
	if code := run([]string{"publish", "--server", "http://127.0.0.1:1", "{not json"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "fact 1") {
		t.Fatalf("bad fact JSON: exit %d, stderr %q", code, errOut.String())
	}
}

// TestServeLogsJSONLines runs "ringcast serve --log-format json": each log
// line is one JSON object; the bind line carries msg, addr, url and epoch.
func TestServeLogsJSONLines(t *testing.T) {
	var stderr logbuf.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run([]string{"serve", "--addr", "127.0.0.1:0", "--demo=false", "--log-format", "json"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	var line map[string]any
	for deadline := time.Now().Add(10 * time.Second); line == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("no JSON bind line; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
		for _, l := range strings.Split(stderr.String(), "\n") {
			var m map[string]any
			if strings.TrimSpace(l) == "" {
				continue
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("log line %q is not JSON: %v", l, err)
			}
			if m["msg"] == "ringcast serving" {
				line = m
			}
		}
	}
	if line["level"] != "INFO" || !strings.HasPrefix(line["url"].(string), "http://127.0.0.1:") || len(line["epoch"].(string)) != 16 {
		t.Fatalf("bind line %v: want level INFO, url and a 16-digit epoch", line)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
}

func TestBadLogFormatIsAnError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--log-format", "xml"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), `log-format "xml": want text or json`) {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestStoreErrorsExitNonZero: a bad store configuration, and NATS that
// does not answer at start, are clear errors and a non-zero exit.
func TestStoreErrorsExitNonZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--store", "disk"}, `store "disk": want memory, embedded or jetstream`},
		{[]string{"serve", "--store", "embedded"}, "store embedded needs --data-dir"},
		{[]string{"serve", "--store", "jetstream"}, "store jetstream needs --nats-url"},
		{[]string{"serve", "--store", "jetstream", "--nats-url", "nats://127.0.0.1:1", "--nats-replicas", "2"}, "nats-replicas must be 1 or 3, not 2"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--store", "jetstream", "--nats-url", "nats://127.0.0.1:1"}, "connect to NATS"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestNonsensicalConfigIsRefusedWithOneErrorPerValue: values that would
// silently disable a guarantee or flood streams are refused at start, all
// of them reported together, one line each, before anything listens —
// from flags and from RINGCAST_* alike.
func TestNonsensicalConfigIsRefusedWithOneErrorPerValue(t *testing.T) {
	t.Setenv("RINGCAST_WINDOW", "0")
	t.Setenv("RINGCAST_MAX_FACT_BYTES", "10")
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--addr", "127.0.0.1:0",
		"--dedupe-keys", "-5", "--heartbeat", "1us", "--coalesce", "1s", "--state-keys", "0",
		"--max-data-depth", "1000", "--publish-burst", "-1", "--idle-timeout", "1ms", "--max-conns", "3",
	}, strings.NewReader(""), &out, &errOut)
	if code == 0 {
		t.Fatal("serve accepted the configuration")
	}
	for _, want := range []string{
		"dedupe-keys must be", "heartbeat must be between 100ms", "coalesce must not exceed heartbeat",
		"max-fact-bytes must be", "max-data-depth must be", "publish-burst must be",
		"idle-timeout must be", "max-conns must be", "state-keys must be between 1 and 16777216, not 0",
		"window must be between 1 and 16777216, not 0",
	} {
		if n := strings.Count(errOut.String(), want); n != 1 {
			t.Errorf("stderr has %q %d times, want once:\n%s", want, n, errOut.String())
		}
	}
}
