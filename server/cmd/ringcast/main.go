// Command ringcast runs the ringcast server and talks to one.
//
//	ringcast serve     run the server (the demo feed with --demo)
//	ringcast tail      subscribe and print one JSON line per fact and signal
//	ringcast publish   publish one commit of facts given as JSON
//	ringcast status    print GetServerStatus as JSON
//	ringcast outcome   print what became of a publish (GetPublishOutcome) as JSON
//	ringcast load      drive a server on this machine and measure it from outside
//	ringcast token     mint an HS256 token for a server with --auth jwt (development, tests)
//
// Every flag can also be given as RINGCAST_<NAME> (upper case, dashes as
// underscores); a flag on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ringcast/ringcast/server/internal/ops/buildinfo"
)

// version overrides the build info when set at build time with
// -ldflags "-X main.version=…"; empty (the default) reports the module
// version and VCS revision `go build` stamps (server/internal/ops/buildinfo).
var version = ""

// versionString is what `ringcast version` prints and ServerStatus reports.
func versionString() string {
	if version != "" {
		return version
	}
	return buildinfo.Read().String()
}

const usage = `ringcast — one ordered, resumable event stream for browsers, services and curl.

Usage:
  ringcast serve   [flags]          run the server (--demo: the embedded demo feed)
  ringcast tail    [flags]          subscribe; print one JSON object per fact and per signal
  ringcast publish [flags] [FACT…]  publish one commit; facts as JSON arguments or on stdin
  ringcast status  [flags]          print the server's status as JSON
  ringcast outcome [flags] KEY      print what became of the publish with idempotency key KEY, as JSON
  ringcast load    [flags]          load a server on this machine; print its CPU, memory and fan-out as JSON
  ringcast token   [flags]          mint an HS256 token from an HMAC secret (development, tests)
  ringcast version                  print the version

Run "ringcast COMMAND -h" for a command's flags. Flags may come before or
after a command's arguments ("--" ends them). Every flag may also be set
as RINGCAST_<NAME>, e.g. RINGCAST_ADDR=127.0.0.1:9090 (a non-loopback
address also needs --auth jwt, or --allow-unauthenticated).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "serve":
		err = serveCmd(ctx, args[1:], stderr)
	case "tail":
		err = tailCmd(ctx, args[1:], stdout, stderr)
	case "publish":
		err = publishCmd(ctx, args[1:], stdin, stdout, stderr)
	case "status":
		err = statusCmd(ctx, args[1:], stdout, stderr)
	case "outcome":
		err = outcomeCmd(ctx, args[1:], stdout, stderr)
	case "load":
		err = loadCmd(ctx, args[1:], stdout, stderr)
	case "token":
		err = tokenCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "ringcast: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "ringcast %s: %v\n", args[0], err)
		return 1
	}
}
