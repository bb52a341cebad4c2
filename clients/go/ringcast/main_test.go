package ringcast_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// serverBin is the ringcast binary the examples run: $RINGCAST_BIN, or one
// built from this repository's server/cmd/ringcast.
var serverBin = os.Getenv("RINGCAST_BIN")

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if serverBin == "" {
		dir, err := os.MkdirTemp("", "ringcast-go-client-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		serverBin = filepath.Join(dir, "ringcast")
		build := exec.Command("go", "build", "-o", serverBin, "./server/cmd/ringcast")
		build.Dir = filepath.Join("..", "..", "..") // the repository root
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			// Outside the repository (the module from a module cache):
			// the examples need a server, the tests do not.
			fmt.Fprintf(os.Stderr, "examples not run: no ringcast server (set RINGCAST_BIN): %v\n", err)
			_ = flag.Set("test.run", "^Test")
		}
		defer os.RemoveAll(dir)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
