package main

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBuiltBinaryReportsVCSRevision builds ringcast with `go build` in a
// git checkout of this tree and shows the stamped identity: `ringcast
// version` names the commit git reports for HEAD, and a server started from
// that binary reports the same string as ServerStatus server_version.
//
// The checkout is a fresh repository holding this work tree's files (go
// stamps only a checkout whose .git is a directory, not a linked worktree);
// -buildvcs=true overrides a GOFLAGS=-buildvcs=false in the environment.
func TestBuiltBinaryReportsVCSRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	repo := checkoutCopy(t, strings.TrimSpace(string(root)))
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(string(head))[:12]
	bin := filepath.Join(t.TempDir(), "ringcast")
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", bin, "./server/cmd/ringcast")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(out))
	if !strings.Contains(version, rev) || version == "dev" {
		t.Fatalf("ringcast version = %q, want it to name revision %s", version, rev)
	}

	srv := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--demo=false")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	bound := regexp.MustCompile(`url=(\S+)`)
	var url string
	for sc := bufio.NewScanner(stderr); url == "" && sc.Scan(); {
		if m := bound.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatal("server did not log its address")
	}
	status, err := exec.CommandContext(ctx, bin, "status", "--server", url).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"serverVersion":"` + version + `"`; !strings.Contains(string(status), want) {
		t.Fatalf("status %s: want %s", status, want)
	}
}

// checkoutCopy commits the tracked and untracked (not ignored) files of the
// work tree at root into a new repository and returns its directory.
func checkoutCopy(t *testing.T, root string) string {
	t.Helper()
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=ringcast", "-c", "user.email=ringcast@localhost", "commit", "-q", "-m", "build"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}
