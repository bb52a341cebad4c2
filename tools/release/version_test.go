package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestStampedVersion(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	settings := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		version, modified, want string
	}{
		{"v1.2.0", "false", "v1.2.0"},
		{"v1.2.0-rc.1", "false", "v1.2.0-rc.1"},
		{"v1.2.0+dirty", "true", "v1.2.0+dirty (rev 0123456789ab-dirty)"},
		{"v0.0.0-20261130120000-0123456789ab", "false", "v0.0.0-20261130120000-0123456789ab"},
		{"v0.0.0-20261130120000-0123456789ab+dirty", "true", "v0.0.0-20261130120000-0123456789ab+dirty"},
		{"(devel)", "true", "(devel) (rev 0123456789ab-dirty)"},
	} {
		if got := stampedVersion(&buildinfo.BuildInfo{Main: debug.Module{Version: c.version}, Settings: settings(c.modified)}); got != c.want {
			t.Errorf("%s (modified %s): %q, want %q", c.version, c.modified, got, c.want)
		}
	}
	if got := stampedVersion(&buildinfo.BuildInfo{}); got != "(devel)" {
		t.Errorf("unstamped: %q", got)
	}
}

func TestImageTag(t *testing.T) {
	for v, want := range map[string]string{
		"v0.1.0": "v0.1.0",
		"v0.0.0-20261130120000-0123456789ab+dirty": "v0.0.0-20261130120000-0123456789ab-dirty",
		"(devel) (rev 0123456789ab-dirty)":         "devel-rev-0123456789ab-dirty",
		"(devel)":                                  "devel",
		"()":                                       "dev",
	} {
		if got := imageTag(v); got != want || !imageVersion.MatchString(got) {
			t.Errorf("imageTag(%q) = %q, want %q (a valid tag)", v, got, want)
		}
	}
}

// git runs git in dir for a test.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestUntaggedReleaseWarns: building a release version from a commit that
// is not the one tagged with it, or from a tree with changes, warns; the
// tagged clean commit does not.
func TestUntaggedReleaseWarns(t *testing.T) {
	ctx := hangGuard(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "f")
	git(t, dir, "commit", "-qm", "one")
	if w := untagged(ctx, dir, "v0.1.0"); !strings.Contains(w, "there is no tag v0.1.0") {
		t.Errorf("no tag: %q", w)
	}
	git(t, dir, "tag", "-a", "v0.1.0", "-m", "v0.1.0")
	if w := untagged(ctx, dir, "v0.1.0"); w != "" {
		t.Errorf("the tagged commit: %q, want no warning", w)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := untagged(ctx, dir, "v0.1.0"); !strings.Contains(w, "uncommitted changes") {
		t.Errorf("a changed tree: %q", w)
	}
	git(t, dir, "commit", "-qam", "two")
	if w := untagged(ctx, dir, "v0.1.0"); !strings.Contains(w, "tag v0.1.0 is commit") {
		t.Errorf("a later commit: %q", w)
	}
	if w := untagged(ctx, t.TempDir(), "v0.1.0"); !strings.Contains(w, "not a git checkout") {
		t.Errorf("no checkout: %q", w)
	}

	// `release build` says it, before it builds anything.
	var buf bytes.Buffer
	warnings = &buf
	t.Cleanup(func() { warnings = os.Stderr })
	if err := run(ctx, []string{"build", "-root", dir, "-version", "v0.1.0", "-targets", "bad"}); err == nil {
		t.Fatal("build with a bad target: no error")
	}
	if !strings.Contains(buf.String(), "release: warning: building v0.1.0 from an untagged commit") {
		t.Errorf("release build of an untagged commit: stderr %q, want the warning", buf.String())
	}
}

// TestImageVersionIsTheBinarys: in a git checkout, an image built without
// VERSION is labelled and tagged with the very string `ringcast version`
// prints for its binary and for `go build` of the same tree: one version
// per build (a pseudo-version naming the commit, here).
func TestImageVersionIsTheBinarys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice")
	}
	if runtime.GOOS != "linux" {
		t.Skip("runs the image's linux binary")
	}
	ctx := hangGuard(t)
	// A clone: go stamps the version of a checkout whose .git is a
	// directory (not of a linked work tree).
	clone := filepath.Join(t.TempDir(), "ringcast")
	if out, err := exec.CommandContext(ctx, "git", "clone", "-q", "--no-hardlinks", repoRoot(t), clone).CombinedOutput(); err != nil {
		t.Skipf("git clone of the repository: %v\n%s", err, out)
	}
	certs := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ringcast-image.tar")
	if err := imageCmd(ctx, clone, "", runtime.GOARCH, certs, out); err != nil {
		t.Fatal(err)
	}
	version := func(bin string) string {
		t.Helper()
		b, err := exec.CommandContext(ctx, bin, "version").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	imgBin := filepath.Join(t.TempDir(), "ringcast")
	if err := os.WriteFile(imgBin, imageFile(t, out, imageBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	inImage := version(imgBin)

	built := filepath.Join(t.TempDir(), "ringcast")
	// As `go tool task build` does: -buildvcs=true wins over a
	// GOFLAGS=-buildvcs=false of the environment (the default, auto,
	// stamps a checkout too).
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", built, "./server/cmd/ringcast")
	build.Dir = clone
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	byGoBuild := version(built)
	rev := git(t, clone, "rev-parse", "HEAD")[:12]
	if !strings.Contains(byGoBuild, rev) || inImage != byGoBuild {
		t.Fatalf("ringcast version: %q in the image, %q from go build; want one string naming %s", inImage, byGoBuild, rev)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels["org.opencontainers.image.version"]; got != byGoBuild {
		t.Errorf("version label %q, want %q", got, byGoBuild)
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if want := "ringcast:" + imageTag(byGoBuild); len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{want}) {
		t.Errorf("manifest %+v, want one image tagged %s", manifest, want)
	}
}

// imageFile is the content of one file of the image tarball's one layer.
func imageFile(t *testing.T, tarPath, name string) []byte {
	t.Helper()
	img, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d: %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no %s in the image", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}
