package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPrepareMakesGoInstallWork plays a release of v0.0.1 on a copy of
// this tree, offline: the root module as it is (with its replace lines) is
// refused by `go install …@version`; after Prepare, the three modules,
// served from a file proxy as the tags would serve them, resolve and
// `go install -n …@v0.0.1` plans the build. Restore then brings the
// replace lines back.
func TestPrepareMakesGoInstallWork(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the tree and extracts the dependencies")
	}
	ctx := hangGuard(t)
	repo := checkoutCopy(t, repoRoot(t))
	before, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	modcache := t.TempDir()
	t.Cleanup(func() { makeWritable(modcache) })
	realCache := strings.TrimSpace(goEnv(ctx, "GOMODCACHE"))
	work := t.TempDir()
	const pkg = rootModule + "/server/cmd/ringcast"
	install := func(version string) (string, error) {
		cmd := exec.CommandContext(ctx, "go", "install", "-n", pkg+"@"+version)
		cmd.Dir = work
		cmd.Env = append(os.Environ(),
			"GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOTOOLCHAIN=local",
			"GOBIN="+filepath.Join(work, "bin"), "GOMODCACHE="+modcache,
			"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(realCache, "cache", "download")))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	root := nested{rootModule, "."}

	// Today's tree, tagged as is: refused.
	if err := addToProxy(ctx, repo, proxy, root, "v0.0.0-before"); err != nil {
		t.Fatal(err)
	}
	if out, err := install("v0.0.0-before"); err == nil || !strings.Contains(out, "replace directives") {
		t.Fatalf("go install of a module with replace lines: err %v\n%s", err, out)
	}

	// The release commit.
	if err := prepare(ctx, repo, "v0.0.1", proxy); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{".", "clients/go"} {
		m := modJSON(t, filepath.Join(repo, dir))
		if len(m.Replace) != 0 {
			t.Errorf("%s/go.mod still replaces %+v", dir, m.Replace)
		}
		for _, r := range m.Require {
			if strings.HasPrefix(r.Path, rootModule+"/") && r.Version != "v0.0.1" {
				t.Errorf("%s/go.mod requires %s %s, want v0.0.1", dir, r.Path, r.Version)
			}
		}
	}
	if err := addToProxy(ctx, repo, proxy, root, "v0.0.1"); err != nil {
		t.Fatal(err)
	}
	out, err := install("v0.0.1")
	if err != nil {
		t.Fatalf("go install -n %s@v0.0.1: %v\n%s", pkg, err, out)
	}
	for _, want := range []string{rootModule + "@v0.0.1", clientModule + "@v0.0.1", genModule + "@v0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the planned build does not use %s", want)
		}
	}

	// The commit after: the replace lines back.
	if err := Restore(ctx, repo); err != nil {
		t.Fatal(err)
	}
	// The same go.mod as before the release, but for the versions required.
	after, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	bumped := regexp.MustCompile(`(?m)^(\tgithub\.com/ringcast/ringcast/(?:clients|gen)/go) v\S+$`)
	if want := bumped.ReplaceAllString(string(before), "$1 v0.0.1"); string(after) != want {
		t.Errorf("go.mod after Restore:\n%s\nwant:\n%s", after, want)
	}
	if m := modJSON(t, filepath.Join(repo, "clients/go")); len(m.Replace) != 1 {
		t.Errorf("clients/go/go.mod after Restore replaces %+v, want gen/go", m.Replace)
	}
}

type modFile struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

func modJSON(t *testing.T, dir string) modFile {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var m modFile
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// makeWritable lets t.TempDir remove a module cache (read-only files).
func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

// checkoutCopy commits the tracked and untracked (not ignored) files of the
// work tree at root into a new repository and returns its directory.
func checkoutCopy(t *testing.T, root string) string {
	t.Helper()
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue // node_modules links and the like
		}
		data, err := os.ReadFile(src)
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
