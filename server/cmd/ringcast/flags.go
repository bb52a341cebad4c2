package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// errUsage marks an error already reported with the command's usage.
var errUsage = errors.New("usage")

// newFlagSet returns a flag set that reports errors to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ringcast %s\n\nEvery flag may also be set as the environment variable shown with it\n(RINGCAST_<NAME>); a flag on the command line wins.\n", synopsis)
		printFlags(fs.Output(), fs)
	}
	return fs
}

// parseFlags parses args, then fills every flag not given on the command
// line from its RINGCAST_<NAME> environment variable.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package reports a bad value as a "parse error": it is
	// reported here instead, with what the flag takes.
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = out.Write(buf.Bytes())
			return err
		}
		fmt.Fprintln(out, explainParseError(fs, err))
		fs.Usage()
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (--%s): want %s", name, v, f.Name, wants(f)))
			}
		}
	})
	return errors.Join(errs...)
}

var badValue = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:]+): `)

// explainParseError rewrites the flag package's error for a bad value
// (`invalid value "abc" for flag -window: parse error`) to say what the
// flag takes: `invalid value "abc" for --window: want an integer`.
func explainParseError(fs *flag.FlagSet, err error) string {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return err.Error()
	}
	want := wants(f)
	if strings.HasSuffix(err.Error(), "value out of range") {
		want += " within range"
	}
	return fmt.Sprintf("invalid value %s for --%s: want %s", m[1], f.Name, want)
}

// wants is what a flag takes, for errors: "an integer", "a duration such
// as 30s", ….
func wants(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "true or false"
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch g.Get().(type) {
	case int, int64:
		return "an integer"
	case uint, uint64:
		return "a whole number (0 or more)"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration such as 30s, 1m30s or 250ms"
	}
	return "a valid value"
}

// envName is the environment variable for a flag: RINGCAST_WRITE_TIMEOUT
// for --write-timeout.
func envName(flagName string) string {
	return "RINGCAST_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
