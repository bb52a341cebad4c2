package main

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestInterspersed: flags after positional arguments are moved before
// them; a flag's value goes with it (not a boolean's, not "=value"); "--"
// ends the flags; an unknown flag stays a flag.
func TestInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("server", "", "")
	fs.Bool("lines", false, "")
	for _, c := range []struct{ args, want []string }{
		{[]string{"a", "--server", "u", "b"}, []string{"--server", "u", "--", "a", "b"}},
		{[]string{"a", "-server=u", "--lines", "b"}, []string{"-server=u", "--lines", "--", "a", "b"}},
		{[]string{"--server", "-u-", "a"}, []string{"--server", "-u-", "--", "a"}},
		{[]string{"a", "--", "--server", "u"}, []string{"--", "a", "--server", "u"}},
		{[]string{"-", "--bogus", "a"}, []string{"--bogus", "--", "-", "a"}},
		{[]string{"a", "--server"}, []string{"--server"}}, // needs a value: the flag package says so
		{[]string{"--server"}, []string{"--server"}},
		{nil, []string{"--"}},
	} {
		if got := interspersed(fs, c.args); !slices.Equal(got, c.want) {
			t.Errorf("interspersed(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestFlagsAfterArguments: `ringcast publish '{…}' --server URL` and
// `ringcast outcome KEY --server URL` take the flags that follow the
// arguments; after "--" an argument starting with "-" is an argument.
func TestFlagsAfterArguments(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	if code, _, errOut := runCmd("tail", "--server"); code != 2 || !strings.Contains(errOut, "needs an argument") {
		t.Fatalf("tail --server without a value: exit %d, %s; want 2, the flag needs an argument", code, errOut)
	}
	if code, out, errOut := runCmd("publish", `{"topic":"i/a","type":"t"}`, "--server", srv.URL, "--idempotency-key", "-dash"); code != 0 || !strings.Contains(out, `"seq":`) {
		t.Fatalf("publish FACT --server: exit %d, %s %s", code, out, errOut)
	}
	if code, out, errOut := runCmd("outcome", "--server", srv.URL, "--", "-dash"); code != 0 || !strings.Contains(out, `"applied":true`) {
		t.Fatalf("outcome -- -dash: exit %d, %s %s", code, out, errOut)
	}
	if code, out, errOut := runCmd("outcome", "never-sent", "--server", srv.URL, "--protocol", "grpc"); code != 0 || !strings.Contains(out, `"applied":false`) {
		t.Fatalf("outcome KEY --server: exit %d, %s %s", code, out, errOut)
	}
	if code, out, errOut := runCmd("tail", "--topic", "i", "--end-at-head", "--server", srv.URL); code != 0 || !strings.Contains(out, `"topic":"i/a"`) {
		t.Fatalf("tail: exit %d, %s %s", code, out, errOut)
	}
}

// TestEveryCommandParsesFlagsAfterAnArgument: for every command, a flag
// after a positional argument is parsed as a flag (an unknown one is
// refused as such), not taken for a second argument.
func TestEveryCommandParsesFlagsAfterAnArgument(t *testing.T) {
	for _, cmd := range []string{"serve", "tail", "publish", "status", "outcome", "load", "token"} {
		code, _, errOut := runCmd(cmd, "arg", "--no-such-flag")
		if code != 2 || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") {
			t.Errorf("ringcast %s arg --no-such-flag: exit %d, stderr %q; want the flag refused (exit 2)", cmd, code, firstLine1(errOut))
		}
		if cmd == "publish" || cmd == "outcome" {
			continue
		}
		if code, _, errOut := runCmd(cmd, "arg"); code != 2 || !strings.Contains(errOut, `unexpected arguments ["arg"]`) {
			t.Errorf("ringcast %s arg: exit %d, stderr %q; want the argument refused (exit 2)", cmd, code, firstLine1(errOut))
		}
	}
}

func firstLine1(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
