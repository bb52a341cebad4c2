package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// flagGroup is one heading of a command's help and the flags under it, in
// the order shown.
type flagGroup struct {
	title string
	note  string // a line under the heading; optional
	flags []string
}

// helpGroups are the headings of each command's help, by command name. A
// command not listed here shows its flags under one "Flags" heading. Every
// flag of a listed command belongs to exactly one of its groups
// (TestHelpGroupsEveryFlagOnce fails otherwise); one it forgot would still
// be shown, under "Other flags".
//
// To add a flag to serve's help, append its name to the flags of one of
// serveGroups' rows (or add a row); nothing else needs to change.
var helpGroups = map[string][]flagGroup{
	"serve": serveGroups,
}

// serveGroups are serve's flags by concern.
var serveGroups = []flagGroup{
	{title: "Listening, TLS and what is served", flags: []string{
		"addr", "tls-cert", "tls-key", "console", "reflection",
	}},
	{title: "The ring and its streams", flags: []string{
		"window", "max-ring-bytes", "state-keys", "max-state-bytes", "heartbeat", "coalesce", "lease", "write-timeout", "sse-park",
	}},
	{title: "Publishing: sizes and idempotency keys", flags: []string{
		"max-request-bytes", "max-fact-bytes", "max-data-depth", "dedupe-window", "dedupe-keys", "dedupe-keys-per-client",
	}},
	{title: "Per-client limits and the edge", flags: []string{
		"max-streams-per-client", "publish-rate", "publish-burst", "publish-byte-rate", "publish-byte-burst",
		"max-conns", "max-conns-per-client", "idle-timeout", "read-timeout", "max-h2-streams", "max-h2-resets", "h2-reset-penalty",
	}},
	{title: "Who may call: auth, Host names, CORS", flags: []string{
		"auth", "jwt-key-file", "jwt-issuer", "jwt-audience", "allow-unauthenticated", "allowed-host", "cors-origin",
	}},
	{title: "Store: memory, embedded or NATS JetStream", flags: []string{
		"store", "data-dir", "nats-url", "nats-creds", "nats-stream", "nats-replicas",
		"nats-max-bytes", "nats-max-age", "nats-max-msgs", "store-recover", "state-rebuild",
	}},
	{title: "Operations: metrics, profiling, logs, demo feed, shutdown",
		note: "Tracing has no flag: the standard OTEL_* variables turn it on (README, Tracing).",
		flags: []string{
			"metrics", "metrics-addr", "pprof-addr", "pprof-allow-remote", "log-level", "log-format", "access-log",
			"demo", "demo-interval", "shutdown-delay", "shutdown-grace",
		}},
}

// printFlags writes fs's flags to w under the command's headings
// (helpGroups), or under one "Flags" heading, each with the environment
// variable it is also read from.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	groups := helpGroups[fs.Name()]
	shown := map[string]bool{}
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		if g.note != "" {
			fmt.Fprintf(w, "  %s\n", g.note)
		}
		for _, name := range g.flags {
			if f := fs.Lookup(name); f != nil && !shown[name] {
				shown[name] = true
				printFlag(w, f)
			}
		}
	}
	title := "Flags"
	if len(groups) > 0 {
		title = "Other flags"
	}
	headed := false
	fs.VisitAll(func(f *flag.Flag) {
		if shown[f.Name] {
			return
		}
		if !headed {
			fmt.Fprintf(w, "\n%s:\n", title)
			headed = true
		}
		printFlag(w, f)
	})
}

// printFlag writes one flag as the flag package does, with two dashes and
// its environment variable:
//
//	--window int  (RINGCAST_WINDOW)
//	    events retained in the ring … (default 1024)
func printFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	var b strings.Builder
	b.WriteString("  --")
	b.WriteString(f.Name)
	if typ != "" {
		b.WriteString(" ")
		b.WriteString(typ)
	}
	b.WriteString("  (")
	b.WriteString(envName(f.Name))
	b.WriteString(")\n      ")
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n      "))
	if !isZeroValue(f) {
		if typ == "string" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
	}
	b.WriteString("\n")
	_, _ = io.WriteString(w, b.String())
}

// isZeroValue reports whether a flag's default is its type's zero value,
// which the help does not show (as the flag package decides it).
func isZeroValue(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	v, ok := z.Interface().(flag.Value)
	return ok && f.DefValue == v.String()
}
