package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
)

// helpOf runs "ringcast CMD -h" and returns what it printed.
func helpOf(t *testing.T, cmd string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{cmd, "-h"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%s -h: exit %d: %s", cmd, code, stderr.String())
	}
	return stderr.String()
}

var (
	helpHeading = regexp.MustCompile(`^(\S.*):$`)
	helpFlag    = regexp.MustCompile(`^  --([a-z0-9-]+)(?: \S+)?  \((RINGCAST_[A-Z0-9_]+)\)$`)
)

// helpFlags parses a help: each flag line's flag, environment name and
// heading, in order.
func helpFlags(help string) (flags []string, env, heading map[string]string) {
	env, heading = map[string]string{}, map[string]string{}
	current := ""
	for _, l := range strings.Split(help, "\n") {
		if m := helpHeading.FindStringSubmatch(l); m != nil {
			current = m[1]
			continue
		}
		if m := helpFlag.FindStringSubmatch(l); m != nil {
			flags = append(flags, m[1])
			env[m[1]], heading[m[1]] = m[2], current
		}
	}
	return flags, env, heading
}

// TestHelpGroupsEveryFlagOnce: serve's help shows every one of its flags
// exactly once, under one of serveGroups' headings (a flag added without a
// group fails here), with the environment variable it is read from; every
// name in serveGroups is a flag of serve, listed once.
func TestHelpGroupsEveryFlagOnce(t *testing.T) {
	fs := serveFlagSet()
	flags, env, heading := helpFlags(helpOf(t, "serve"))
	titles := map[string]bool{}
	inTable := map[string]int{}
	for _, g := range serveGroups {
		titles[g.title] = true
		for _, name := range g.flags {
			inTable[name]++
			if fs.Lookup(name) == nil {
				t.Errorf("serveGroups %q lists %q, which is not a flag of serve", g.title, name)
			}
		}
	}
	for name, n := range inTable {
		if n != 1 {
			t.Errorf("serveGroups lists %q %d times, want once", name, n)
		}
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if c := count(flags, f.Name); c != 1 {
			t.Errorf("--%s shown %d times in serve's help, want once", f.Name, c)
		}
		if !titles[heading[f.Name]] {
			t.Errorf("--%s is under %q, not one of serveGroups' headings: add it to a row of serveGroups (help.go)", f.Name, heading[f.Name])
		}
		if env[f.Name] != envName(f.Name) {
			t.Errorf("--%s shown with %q, want %s", f.Name, env[f.Name], envName(f.Name))
		}
	})
	if len(flags) != n {
		t.Errorf("serve's help shows %d flag lines, serve has %d flags", len(flags), n)
	}
}

// TestHelpShowsEveryFlagWithItsEnvName: every command's help shows each of
// its flags once, with its environment variable.
func TestHelpShowsEveryFlagWithItsEnvName(t *testing.T) {
	for _, cmd := range []string{"serve", "tail", "publish", "status", "outcome", "load", "token"} {
		t.Run(cmd, func(t *testing.T) {
			help := helpOf(t, cmd)
			flags, env, _ := helpFlags(help)
			if len(flags) == 0 {
				t.Fatalf("no flag lines in\n%s", help)
			}
			for _, f := range flags {
				if count(flags, f) != 1 {
					t.Errorf("--%s shown %d times", f, count(flags, f))
				}
				if env[f] != envName(f) {
					t.Errorf("--%s shown with %q, want %s", f, env[f], envName(f))
				}
			}
			// Every "  --" line is a flag line the parser read.
			if got := strings.Count(help, "\n  --"); got != len(flags) {
				t.Errorf("%d lines begin with --, %d parsed as flag lines", got, len(flags))
			}
		})
	}
}

// TestHelpExampleServes: the environment example the help gives is
// accepted as it stands under the default --auth none.
func TestHelpExampleServes(t *testing.T) {
	for _, text := range []string{usage, helpOf(t, "serve")} {
		for _, m := range regexp.MustCompile(`RINGCAST_ADDR=(\S+)`).FindAllStringSubmatch(text, -1) {
			cfg := app.Defaults()
			cfg.Addr = m[1]
			if err := cfg.Validate(); err != nil {
				t.Errorf("example RINGCAST_ADDR=%s is refused: %v", m[1], err)
			}
		}
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
