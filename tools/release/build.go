package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Target is one platform of a release build.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// ReleaseTargets are the platforms `go tool task release` builds.
var ReleaseTargets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
}

// parseTarget reads "linux/amd64".
func parseTarget(s string) (Target, error) {
	os_, arch, ok := strings.Cut(s, "/")
	if !ok || os_ == "" || arch == "" {
		return Target{}, fmt.Errorf("target %q: want OS/ARCH, e.g. linux/amd64", s)
	}
	return Target{os_, arch}, nil
}

// releaseVersion is a release tag: v1.2.3, or v1.2.3-rc.1.
var releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// imageVersion is what an image may be stamped with: a release version, or
// (for a development image) anything that is also a valid image tag, such
// as `git describe` prints.
var imageVersion = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// checkReleaseVersion refuses a version that is not a release tag.
func checkReleaseVersion(v string) error {
	if !releaseVersion.MatchString(v) {
		return fmt.Errorf("VERSION=%q: want a release tag such as v0.1.0 or v0.2.0-rc.1", v)
	}
	return nil
}

// BinaryName is the file a release build writes for t.
func BinaryName(version string, t Target) string {
	return fmt.Sprintf("ringcast-%s-%s-%s", version, t.OS, t.Arch)
}

// BuildBinary builds the ringcast command of the repository at root for t,
// static and stamped with version, into out. Every release binary and the
// image's binary are built here, with these flags:
//
//   - CGO_ENABLED=0: a static binary, no libc needed (the image has none);
//   - -trimpath: no build machine paths in the binary (reproducible);
//   - -ldflags "-s -w -X main.version=…": no symbol tables, and the version
//     `ringcast version` and ServerStatus report (an empty version: no -X,
//     and the binary reports the version the go command stamps, as `go
//     build` of the tree does);
//   - -buildvcs=auto: the commit is stamped when the tree is a git checkout
//     (`go version -m` shows it), whatever GOFLAGS says;
//   - GOWORK=off: built from the root module's go.mod alone, with the very
//     dependency versions `go install …@version` resolves, not the
//     workspace's (go.work also joins the tools module).
func BuildBinary(ctx context.Context, root, version string, t Target, out string) error {
	ldflags := "-s -w"
	if version != "" {
		ldflags += " -X main.version=" + version
	}
	cmd := exec.CommandContext(ctx, "go", "build",
		"-trimpath", "-buildvcs=auto",
		"-ldflags", ldflags,
		"-o", out, "./server/cmd/ringcast")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", t, err, b)
	}
	return nil
}

// BuildRelease builds every target into dir and writes dir/SHA256SUMS
// (the format `sha256sum -c` and `shasum -a 256 -c` read).
func BuildRelease(ctx context.Context, root, version, dir string, targets []Target) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sums := map[string]string{}
	for _, t := range targets {
		name := BinaryName(version, t)
		path := filepath.Join(dir, name)
		fmt.Fprintf(os.Stderr, "building %s\n", path)
		if err := BuildBinary(ctx, root, version, t, path); err != nil {
			return err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		sums[name] = sum
	}
	return writeSums(filepath.Join(dir, "SHA256SUMS"), sums)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeSums(path string, sums map[string]string) error {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
