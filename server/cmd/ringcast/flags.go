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
		fmt.Fprintf(fs.Output(), "Usage: ringcast %s\n\nFlags may come before or after the arguments; \"--\" ends the flags (an\nargument after it that starts with \"-\" is an argument). Every flag may\nalso be set as the environment variable shown with it (RINGCAST_<NAME>);\na flag on the command line wins.\n", synopsis)
		printFlags(fs.Output(), fs)
	}
	return fs
}

// parseFlags parses args, flags before or after the positional arguments
// (interspersed), then fills every flag not given on the command line from
// its RINGCAST_<NAME> environment variable.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package reports a bad value as a "parse error": it is
	// reported here instead, with what the flag takes.
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(interspersed(fs, args))
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

// noArguments refuses positional arguments, for a command that takes none.
func noArguments(fs *flag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	fmt.Fprintf(fs.Output(), "ringcast %s: unexpected arguments %q\n", fs.Name(), fs.Args())
	return errUsage
}

// interspersed moves the flags of args before its positional arguments,
// so that `ringcast publish '{…}' --server URL` means what it says: the flag
// package alone stops at the first positional argument and would take
// "--server" for a fact. A flag's value is the next argument unless the
// flag is boolean or has "=value"; "--" ends the flags (what follows is
// positional, "-…" included), and a lone "-" is positional. An unknown
// flag stays a flag, for Parse to refuse.
func interspersed(fs *flag.FlagSet, args []string) []string {
	flags := make([]string, 0, len(args)+1)
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(a[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 == len(args) {
			// A flag that takes a value, last, without one: no "--" for it
			// to take as its value, so the flag package says it needs one.
			return flags
		}
		i++
		flags = append(flags, args[i])
	}
	return append(append(flags, "--"), pos...)
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
