package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func hangGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestReleaseBuildHostTarget runs the release build for this machine's
// platform only (the four targets are `go tool task release`, not CI): the
// binary is static, trimmed, listed in SHA256SUMS, and `ringcast version`
// prints the stamped version.
func TestReleaseBuildHostTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx := hangGuard(t)
	const version = "v0.0.1-test.1"
	host := Target{runtime.GOOS, runtime.GOARCH}
	dir := t.TempDir()
	if err := BuildRelease(ctx, repoRoot(t), version, dir, []Target{host}); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, BinaryName(version, host))
	sum, err := fileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := sum + "  " + BinaryName(version, host) + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS = %q, want %q", sums, want)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": host.OS, "GOARCH": host.Arch} {
		if settings[k] != v {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
		}
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != version {
		t.Fatalf("ringcast version = %q, want %q", got, version)
	}
}

func TestVersionChecks(t *testing.T) {
	for _, v := range []string{"v0.1.0", "v1.2.3-rc.1", "v10.0.0"} {
		if err := checkReleaseVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "0.1.0", "v0.1", "v01.0.0", "v0.1.0+meta", "v0.1.0 ", "latest"} {
		if err := checkReleaseVersion(v); err == nil {
			t.Errorf("%q accepted as a release version", v)
		}
	}
	if err := run(context.Background(), []string{"build", "-version", "0.1.0"}); err == nil || !strings.Contains(err.Error(), "want a release tag") {
		t.Errorf("build with a bad version: %v", err)
	}
	if err := run(context.Background(), []string{"image", "-arch", "386"}); err == nil || !strings.Contains(err.Error(), "want amd64 or arm64") {
		t.Errorf("image for 386: %v", err)
	}
}

// TestImage builds dist/ringcast-image.tar as `go tool task image` does
// (into a temporary file), reads it back, checks its config and files,
// then runs the binary taken out of it: `ringcast version`, the image's
// defaults refusing to serve open on 0.0.0.0, and `serve` on loopback
// with the embedded store answering /healthz.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("runs the image's linux binary")
	}
	ctx := hangGuard(t)
	root := repoRoot(t)
	const version = "v0.0.1-test.1"
	certs := filepath.Join(t.TempDir(), "ca.pem")
	pem := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(certs, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ringcast-image.tar")
	if err := imageCmd(ctx, root, version, runtime.GOARCH, certs, out); err != nil {
		t.Fatal(err)
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{"ringcast:" + version}) {
		t.Fatalf("manifest.json %+v, want one image tagged ringcast:%s", manifest, version)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/ringcast", "serve"}) {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	for _, e := range []string{"RINGCAST_STORE=embedded", "RINGCAST_DATA_DIR=/data", "RINGCAST_ADDR=0.0.0.0:8080"} {
		if !slices.Contains(c.Env, e) {
			t.Errorf("env %q lacks %s", c.Env, e)
		}
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("volumes %v lack /data", c.Volumes)
	}
	rev := gitOutput(ctx, root, "rev-parse", "HEAD")
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.title":    "ringcast",
		"org.opencontainers.image.source":   ImageSource,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.revision": rev,
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}

	// The files, from the one layer.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	headers := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers[h.Name], contents[h.Name] = h, b
	}
	if h := headers["data/"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("/data: %+v, want a directory owned by 65532:65532", h)
	}
	if !bytes.Equal(contents["etc/ssl/certs/ca-certificates.crt"], pem) {
		t.Errorf("CA bundle %q", contents["etc/ssl/certs/ca-certificates.crt"])
	}
	if !strings.Contains(string(contents["etc/passwd"]), "ringcast:x:65532:65532:") {
		t.Errorf("/etc/passwd %q", contents["etc/passwd"])
	}
	binData := contents["usr/local/bin/ringcast"]
	if h := headers["usr/local/bin/ringcast"]; h == nil || h.Mode&0o111 == 0 || len(binData) == 0 {
		t.Fatalf("binary: %+v", h)
	}

	// The binary, run.
	dir := t.TempDir()
	bin := filepath.Join(dir, "ringcast")
	if err := os.WriteFile(bin, binData, 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(v)) != version {
		t.Fatalf("ringcast version = %q, want %q", v, version)
	}
	// The image's environment, /data made a temporary directory.
	env := []string{}
	for _, e := range c.Env {
		if strings.HasPrefix(e, "RINGCAST_DATA_DIR=") {
			e = "RINGCAST_DATA_DIR=" + filepath.Join(dir, "data")
		}
		env = append(env, e)
	}
	// As `docker run IMAGE` with no flags: refused, auth none on 0.0.0.0.
	refuse := exec.CommandContext(ctx, bin, "serve")
	refuse.Env = env
	msg, err := refuse.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "--allow-unauthenticated") {
		t.Fatalf("serve with the image's defaults: err %v, output %s; want a refusal naming --auth jwt and --allow-unauthenticated", err, msg)
	}
	// As `docker run IMAGE --addr …`, on loopback, with the embedded store.
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0")
	srv.Env = env
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
	var logged strings.Builder
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		logged.WriteString(sc.Text() + "\n")
		if m := bound.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("serve did not log its address:\n%s", logged.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if !strings.Contains(logged.String(), "embedded") {
		t.Errorf("serve did not log the embedded store:\n%s", logged.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Errorf("the embedded store wrote nothing in RINGCAST_DATA_DIR: %v", err)
	}
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}

// TestImageReproducible: the same spec gives the same image digest.
func TestImageReproducible(t *testing.T) {
	spec := ImageSpec{
		Binary: []byte("#!/bin/false\n"), Arch: "arm64", Version: "v0.1.0",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  time.Unix(1_800_000_000, 0), CACerts: []byte("pem"),
	}
	var digests []string
	for range 2 {
		img, err := BuildImage(spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Fatalf("digests differ: %v", digests)
	}
	if _, err := BuildImage(ImageSpec{Arch: "amd64", Version: "v0.1.0"}); err == nil {
		t.Fatal("an image without a binary was built")
	}
}
