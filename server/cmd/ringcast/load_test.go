package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/ops/loadgen"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// runLoad runs "ringcast load args…" in-process and returns its exit code,
// stdout and stderr.
func runLoad(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"load"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestLoadFanout(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		extra    []string
	}{
		{"connect", nil},
		{"grpcweb", nil},
		{"grpc", []string{"--connections", "2"}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			t.Parallel()
			cfg := ringtest.Config()
			cfg.Window = 1024
			s := ringtest.Start(t, cfg)
			args := append([]string{"--server", s.URL, "--protocol", tc.protocol,
				"--subscribers", "5", "--rate", "200", "--publishers", "2",
				"--warmup", "100ms", "--duration", "1s", "--progress", "300ms"}, tc.extra...)
			code, out, errOut := runLoad(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res loadgen.FanoutResult
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
			}
			if res.Mode != "fanout" || res.Protocol != tc.protocol || res.Subscribers != 5 {
				t.Errorf("header: %+v", res)
			}
			if res.Deliveries <= 0 || res.Commits <= 0 {
				t.Errorf("deliveries %d, commits %d: want both > 0", res.Deliveries, res.Commits)
			}
			if res.GapViolations != 0 || res.Errors != 0 || res.PublishErrors != 0 {
				t.Errorf("gap violations %d, errors %d (%s), publish errors %d: want 0",
					res.GapViolations, res.Errors, res.FirstError, res.PublishErrors)
			}
			if res.ServerCPU == nil || res.ServerAfter == nil || res.ServerAfter.Subscribers < 5 {
				t.Errorf("server figures missing: cpu %+v, after %+v", res.ServerCPU, res.ServerAfter)
			}
			if res.LatencyUS == nil || res.LatencyUS.Samples == 0 || res.LatencyUS.P99 < res.LatencyUS.P50 {
				t.Errorf("latency: %+v", res.LatencyUS)
			}
			if tc.protocol == "grpc" && res.Connections != 2 {
				t.Errorf("connections %d, want 2", res.Connections)
			}
			if !strings.Contains(errOut, "deliveries/s") {
				t.Errorf("no progress on stderr: %q", errOut)
			}
		})
	}
}

func TestLoadIdle(t *testing.T) {
	t.Parallel()
	s := ringtest.Start(t, ringtest.Config())
	code, out, errOut := runLoad(t, "--server", s.URL, "--protocol", "grpc", "--idle", "5", "--hold", "10ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res loadgen.IdleResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if res.Mode != "idle" || res.Idle != 5 || res.Connections != 1 || res.Errors != 0 {
		t.Errorf("result: %+v", res)
	}
	if !strings.Contains(errOut, "holding the 5 streams open") {
		t.Errorf("--hold did not hold the streams: stderr %q", errOut)
	}
	if res.Before == nil || res.After == nil || res.After.Subscribers < res.Before.Subscribers+5 {
		t.Errorf("the server's subscriber count did not grow by 5: before %+v, after %+v", res.Before, res.After)
	}
}

// TestLoadIdleSSE: --protocol sse opens idle /events streams, and the
// server counts them.
func TestLoadIdleSSE(t *testing.T) {
	t.Parallel()
	s := ringtest.Start(t, ringtest.Config())
	code, out, errOut := runLoad(t, "--server", s.URL, "--protocol", "sse", "--idle", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res loadgen.IdleResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if res.Mode != "idle" || res.Protocol != "sse" || res.Idle != 5 || res.Connections != 5 || res.Errors != 0 {
		t.Errorf("result: %+v", res)
	}
	if res.Before == nil || res.After == nil || res.After.Subscribers < res.Before.Subscribers+5 {
		t.Errorf("the server's subscriber count did not grow by 5: before %+v, after %+v", res.Before, res.After)
	}
}

func TestLoadBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--subscribers", "0"}, "--subscribers"},
		{[]string{"--subscribers", "x"}, "invalid value"},
		{[]string{"--rate", "-1"}, "--rate"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--publishers", "0"}, "--publishers"},
		{[]string{"--idle", "-3"}, "--idle"},
		{[]string{"--idle", "3", "--hold", "-1s"}, "--hold must not be negative"},
		{[]string{"--hold", "1s"}, "--hold applies to idle mode"},
		{[]string{"--protocol", "sse"}, "--protocol sse applies to idle mode"},
		{[]string{"--protocol", "carrier-pigeon"}, "unknown protocol"},
		{[]string{"--connections", "3", "--subscribers", "10"}, "applies to grpc"},
		{[]string{"--protocol", "grpc", "--connections", "11", "--subscribers", "10"}, "must not exceed"},
		{[]string{"--server", "ftp://127.0.0.1:1"}, "want a URL"},
		{[]string{"--server", "http://192.0.2.10:8080"}, "not a loopback address"},
		{[]string{"--server", "http://example.com"}, "not a loopback address"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		code, out, errOut := runLoad(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("load %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if code, _, errOut := runLoad(t, "-h"); code != 0 || !strings.Contains(errOut, "--allow-remote") {
		t.Errorf("load -h: exit %d, stderr %q", code, errOut)
	}
}

func TestLoadServerDown(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1; the run fails with an error, not a panic.
	code, out, errOut := runLoad(t, "--server", "http://127.0.0.1:1", "--subscribers", "2", "--duration", "100ms")
	if code != 1 || out != "" || !strings.Contains(errOut, "cannot reach a ringcast server at http://127.0.0.1:1") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and why", code, out, errOut)
	}
}
