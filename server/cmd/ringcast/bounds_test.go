package main

import (
	"bytes"
	"flag"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/settings"
	"github.com/ringcast/ringcast/server/internal/testkit/logbuf"
)

// serveFlagSet is serve's flag set with its defaults.
func serveFlagSet() *flag.FlagSet {
	cfg := app.Defaults()
	fs, _ := newServeFlags(&cfg, io.Discard)
	return fs
}

// TestServeFlagBounds runs over serve's flags and serveBounds: every
// numeric and duration flag has exactly one row and every row a flag; each
// flag's default is accepted; and each row accepts its min and max (and 0,
// negative values, when it says so) and refuses values just outside,
// 0 and -1 when it does not say so, NaN and ±Inf, and the largest int64 —
// each refusal naming the flag.
func TestServeFlagBounds(t *testing.T) {
	rows := map[string]bound{}
	for _, b := range serveBounds {
		if _, dup := rows[b.name]; dup {
			t.Errorf("serveBounds has two rows for %s", b.name)
		}
		rows[b.name] = b
		if serveFlagSet().Lookup(b.name) == nil {
			t.Errorf("serveBounds row %s names no flag of serve", b.name)
		}
		if b.min > b.max {
			t.Errorf("%s: min %v above max %v", b.name, b.min, b.max)
		}
	}
	serveFlagSet().VisitAll(func(f *flag.Flag) {
		if _, _, numeric := flagNumber(f); numeric {
			if _, ok := rows[f.Name]; !ok {
				t.Errorf("--%s is numeric but has no row in serveBounds (bounds.go): add one", f.Name)
			}
		}
	})
	if err := checkBounds(serveFlagSet(), serveBounds); err != nil {
		t.Errorf("defaults out of bounds: %v", err)
	}

	for _, b := range serveBounds {
		t.Run(b.name, func(t *testing.T) {
			_, isDuration, _ := flagNumber(serveFlagSet().Lookup(b.name))
			_, isFloat := serveFlagSet().Lookup(b.name).Value.(flag.Getter).Get().(float64)
			str := func(v float64) string {
				if isDuration {
					return time.Duration(v).String()
				}
				return strconv.FormatFloat(v, 'f', -1, 64)
			}
			below, above := b.min-1, b.max+1
			if isDuration { // a nanosecond is lost in a float64 of years
				below, above = b.min-d(time.Millisecond), b.max+d(time.Millisecond)
			}
			if isFloat {
				below, above = math.Nextafter(b.min, math.Inf(-1)), math.Nextafter(b.max, math.Inf(1))
			}
			accept := []string{str(b.min), str(b.max)}
			reject := []string{str(below), str(above), "9223372036854775807"}
			if b.zeroDefault || b.min <= 0 {
				accept = append(accept, "0")
			} else {
				reject = append(reject, "0")
			}
			if b.negativeNone {
				accept = append(accept, str(-1), str(-b.max*2))
			} else if b.min > -1 {
				reject = append(reject, str(-1))
			}
			if isFloat {
				reject = append(reject, "NaN", "+Inf", "-Inf")
			}
			for _, v := range accept {
				fs := serveFlagSet()
				if err := fs.Set(b.name, v); err != nil {
					t.Errorf("--%s %s: %v", b.name, v, err)
					continue
				}
				if err := checkBounds(fs, serveBounds); err != nil {
					t.Errorf("--%s %s refused: %v", b.name, v, err)
				}
			}
			for _, v := range reject {
				if (v == "0" || v == "0s") && b.zeroDefault || strings.HasPrefix(v, "-") && b.negativeNone && v != "-Inf" {
					continue // accepted by the row's meaning of 0 or negative values
				}
				fs := serveFlagSet()
				if err := fs.Set(b.name, v); err != nil {
					continue // refused by the parser
				}
				err := checkBounds(fs, serveBounds)
				if err == nil || !strings.HasPrefix(err.Error(), b.name+" must be ") {
					t.Errorf("--%s %s: %v, want a refusal naming %s", b.name, v, err, b.name)
				}
			}
		})
	}
}

// TestServeRefusesValuesOutOfBounds: serve refuses, before it listens,
// values that used to be accepted and silently turned a limit off or made
// no sense, naming the flag, from the command line and from RINGCAST_*.
func TestServeRefusesValuesOutOfBounds(t *testing.T) {
	for _, tc := range [][2]string{
		{"publish-rate", "NaN"},
		{"publish-rate", "+Inf"},
		{"shutdown-grace", "-1s"},
		{"shutdown-delay", "-1s"},
		{"lease", "1ms"},
		{"dedupe-window", "1000000h"},
		{"h2-reset-penalty", "100h"},
		{"state-rebuild", "-1"},
		{"max-state-bytes", "9223372036854775807"},
	} {
		for _, env := range []bool{false, true} {
			args := []string{"serve", "--addr", "127.0.0.1:0", "--demo=false"}
			if env {
				t.Setenv(envName(tc[0]), tc[1])
			} else {
				args = append(args, "--"+tc[0], tc[1])
			}
			var stderr logbuf.Buffer
			exit := make(chan int, 1)
			go func() { exit <- run(args, strings.NewReader(""), &bytes.Buffer{}, &stderr) }()
			select {
			case code := <-exit:
				if code != 1 || !strings.Contains(stderr.String(), tc[0]+" must be ") {
					t.Errorf("--%s %s (env %v): exit %d, stderr %q; want 1 and the flag named", tc[0], tc[1], env, code, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("--%s %s (env %v): serve started: %s", tc[0], tc[1], env, stderr.String())
			}
			os.Unsetenv(envName(tc[0]))
		}
	}
}

// TestFlagBoundsAreDocumented: docs/limits.md's "Flag bounds" lists every
// row of serveBounds.
func TestFlagBoundsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Flag bounds")
	if !ok {
		t.Fatal(`docs/limits.md has no "## Flag bounds" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, b := range serveBounds {
		if !strings.Contains(section, "| `--"+b.name+"` |") {
			t.Errorf("docs/limits.md, Flag bounds: no row for --%s", b.name)
		}
	}
}

// TestDedupeKeysHelpSaysWhatAFullTableDoes: the hub refuses a new key
// while the table is full of live keys (hub.ErrDedupeFull), it forgets
// none early; the help says so.
func TestDedupeKeysHelpSaysWhatAFullTableDoes(t *testing.T) {
	u := serveFlagSet().Lookup("dedupe-keys").Usage
	if strings.Contains(u, "forgotten first") || !strings.Contains(u, "refused") {
		t.Errorf("--dedupe-keys help: %q; want what a full table does: refuse new keys", u)
	}
}

// TestBadValuesNameTheFlagAndWhatItTakes: a value that does not parse, on
// the command line or in RINGCAST_*, is reported with the flag and what it
// takes, not as the flag package's "parse error".
func TestBadValuesNameTheFlagAndWhatItTakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  [2]string
		code int
		want string
	}{
		{args: []string{"serve", "--window", "abc"}, code: 2, want: `invalid value "abc" for --window: want an integer`},
		{args: []string{"serve", "--window", "99999999999999999999"}, code: 2, want: `invalid value "99999999999999999999" for --window: want an integer within range`},
		{args: []string{"serve", "--heartbeat", "soon"}, code: 2, want: `invalid value "soon" for --heartbeat: want a duration such as 30s`},
		{args: []string{"serve", "--publish-rate", "fast"}, code: 2, want: `invalid value "fast" for --publish-rate: want a number`},
		{args: []string{"serve", "--demo=maybe"}, code: 2, want: `invalid value "maybe" for --demo: want true or false`},
		{args: []string{"tail", "--until", "-1"}, code: 2, want: `invalid value "-1" for --until: want a whole number (0 or more)`},
		{args: []string{"serve"}, env: [2]string{"RINGCAST_WINDOW", "abc"}, code: 1, want: `RINGCAST_WINDOW="abc" (--window): want an integer`},
		{args: []string{"serve"}, env: [2]string{"RINGCAST_HEARTBEAT", "soon"}, code: 1, want: `RINGCAST_HEARTBEAT="soon" (--heartbeat): want a duration such as 30s`},
	} {
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], tc.env[1])
		}
		var out, errOut bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) || strings.Contains(errOut.String(), "parse error") || strings.Contains(errOut.String(), "strconv") {
			t.Errorf("%v %v: exit %d, stderr %q; want %d and %q", tc.args, tc.env, code, errOut.String(), tc.code, tc.want)
		}
		if tc.env[0] != "" {
			os.Unsetenv(tc.env[0])
		}
	}
}

// TestFlagDefaultsAreTheSettings: each numeric and duration flag of serve
// starts at its setting's default (package settings, the one table); a
// default described rather than given (DefaultIs) is 0 on the flag when 0
// means the default.
func TestFlagDefaultsAreTheSettings(t *testing.T) {
	fs := serveFlagSet()
	for _, r := range settings.All {
		v, _, ok := flagNumber(fs.Lookup(r.Name))
		switch {
		case !ok:
			t.Errorf("--%s: not a numeric flag of serve", r.Name)
		case r.DefaultIs == "" && v != r.Default:
			t.Errorf("--%s: default %v, the setting's %v", r.Name, v, r.Default)
		case r.DefaultIs != "" && r.ZeroDefault && v != 0:
			t.Errorf("--%s: default %v, want 0 (%s)", r.Name, v, r.DefaultIs)
		}
	}
}

// TestSettingsAreDocumented: docs/limits.md's "Flag bounds" gives each
// setting's default, min and max, and says which take 0 and negative
// values, as package settings has them.
func TestSettingsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Flag bounds")
	section, _, _ = strings.Cut(section, "\n## ")
	cells := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if c := strings.Split(line, " | "); len(c) == 6 && strings.HasPrefix(c[0], "| `--") {
			cells[strings.Trim(c[0], "|` -")] = c[1:]
		}
	}
	// value is how the table writes v: as the flag takes it, 0 as "0",
	// followed by nothing or a space and a note.
	value := func(cell string, v float64, isDuration bool) bool {
		s := "0"
		if v != 0 {
			s = formatBound(v, isDuration)
		}
		return cell == s || strings.HasPrefix(cell, s+" ")
	}
	for _, r := range settings.All {
		c, ok := cells[r.Name]
		if !ok {
			t.Errorf("docs/limits.md, Flag bounds: no row for --%s", r.Name)
			continue
		}
		def, zero, negative := c[0], c[3], strings.TrimSuffix(c[4], " |")
		if r.DefaultIs != "" && !strings.Contains(strings.ReplaceAll(def, "`", ""), r.DefaultIs) ||
			r.DefaultIs == "" && !value(def, r.Default, r.Duration) {
			t.Errorf("docs/limits.md, --%s: default %q; the setting's is %s %q", r.Name, def, formatBound(r.Default, r.Duration), r.DefaultIs)
		}
		if !value(c[1], r.Min, r.Duration) || !value(c[2], r.Max, r.Duration) {
			t.Errorf("docs/limits.md, --%s: min %q, max %q; the setting's are %s and %s", r.Name, c[1], c[2], formatBound(r.Min, r.Duration), formatBound(r.Max, r.Duration))
		}
		if (zero == "refused") != !(r.ZeroDefault || r.Min <= 0) {
			t.Errorf("docs/limits.md, --%s: 0 %q; the setting takes 0: %v", r.Name, zero, r.ZeroDefault || r.Min <= 0)
		}
		if (negative == "refused") != !r.NegativeNone {
			t.Errorf("docs/limits.md, --%s: negative %q; the setting takes negative values: %v", r.Name, negative, r.NegativeNone)
		}
	}
}
