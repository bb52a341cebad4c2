package faults_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/testkit/bind"
)

// binary is the ringcast command built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ringcast-faults")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ringcast")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := exec.Command(goTool, "build", "-o", binary, "github.com/ringcast/ringcast/server/cmd/ringcast")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the ringcast binary:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is `ringcast serve` running in a subprocess.
type server struct {
	t    testing.TB
	args []string
	addr string // fixed after the first start: restarts bind the same port
	cmd  *exec.Cmd
	// exited is closed when cmd has ended; *exitErr and logs are then final.
	exited  chan struct{}
	exitErr *error
	logs    *strings.Builder
}

// startServer runs `ringcast serve --demo=false args…` on a free loopback
// port and waits until it serves.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	s := &server{t: t, args: args, addr: "127.0.0.1:0"}
	s.start()
	t.Cleanup(func() { s.stop(syscall.SIGKILL) })
	return s
}

func (s *server) URL() string { return "http://" + s.addr }

// start starts the process and waits until it serves. On a restart the
// port may still be in use (by the old process, or by a connection that
// took it meanwhile): it tries again while it is.
func (s *server) start() {
	s.t.Helper()
	if err := bind.Again(s.t, "start ringcast serve on "+s.addr, s.try); err != nil {
		s.t.Fatalf("start ringcast serve: %v", err)
	}
}

func (s *server) try() error {
	cmd := exec.Command(binary, append([]string{"serve", "--demo=false", "--addr", s.addr, "--log-level", "info"}, s.args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	logs := &strings.Builder{}
	addr := make(chan string, 1)
	exited := make(chan struct{})
	var exitErr error
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if i := strings.Index(line, " addr="); i >= 0 && strings.Contains(line, "ringcast serving") {
				a := line[i+len(" addr="):]
				if j := strings.IndexByte(a, ' '); j >= 0 {
					a = a[:j]
				}
				addr <- a
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		exitErr = cmd.Wait()
		close(exited)
	}()
	select {
	case a := <-addr:
		s.addr, s.cmd, s.exited, s.exitErr, s.logs = a, cmd, exited, &exitErr, logs
		return nil
	case <-exited:
		return fmt.Errorf("exited before serving (%v): %s", exitErr, logs.String())
	case <-time.After(30 * time.Second): // hang guard
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("not serving after 30s: %s", logs.String())
	}
}

// stop sends sig and waits for the process to end. SIGTERM must end it
// with exit status 0 (a clean drain).
func (s *server) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	var err error
	select {
	case <-s.exited:
		err = *s.exitErr
	case <-time.After(60 * time.Second): // hang guard
		_ = s.cmd.Process.Kill()
		<-s.exited
		err = *s.exitErr
		s.t.Errorf("ringcast serve did not end within 60s of %v", sig)
	}
	if sig == syscall.SIGTERM && err != nil {
		s.t.Errorf("ringcast serve after SIGTERM: %v; log:\n%s", err, s.logs.String())
	}
	s.cmd = nil
}

// ended reports whether the running process has ended by itself, with
// its exit error and log.
func (s *server) ended() (bool, error, string) {
	select {
	case <-s.exited:
		return true, *s.exitErr, s.logs.String()
	default:
		return false, nil, ""
	}
}

// startRefused starts the server expecting it to refuse to serve, and
// returns the error with its log.
func (s *server) startRefused() error {
	s.t.Helper()
	err := bind.Again(s.t, "start ringcast serve on "+s.addr, s.try)
	if err == nil {
		s.t.Fatalf("ringcast serve started; want it to refuse; log:\n%s", s.logs.String())
	}
	return err
}

// restart stops the server with sig and starts a new instance (a new
// epoch) on the same address.
func (s *server) restart(sig syscall.Signal) {
	s.t.Helper()
	s.stop(sig)
	s.start()
}
