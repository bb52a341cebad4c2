// Command release builds ringcast's release artifacts and prepares a
// release commit (docs/releasing.md). The Taskfile runs it:
//
//	go tool task release VERSION=v0.1.0     static binaries for linux and darwin, amd64 and arm64, and SHA256SUMS, in dist/
//	go tool task image [VERSION=…] [ARCH=…] dist/ringcast-image.tar, for `docker load`
//	go tool task release:prepare VERSION=v0.1.0   the release commit's go.mod files (no replace; the tags required)
//	go tool task release:restore            the replace lines back, after the release commit
//
// Run from the repository's root.
package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const usage = `usage: go run ./tools/release COMMAND [flags]   (from the repository's root)

  build    -version V [-out DIR] [-targets OS/ARCH,…]   static binaries and SHA256SUMS
  image    [-version V] [-arch ARCH] [-out FILE] [-ca-certs FILE]   a docker-loadable image tarball
           (no -version: the version go build stamps, as the binary reports it)
  prepare  -version V    drop the replace lines; require the sibling modules at V
  restore                put the replace lines back
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "the repository's root")
	version := fs.String("version", "", "the version stamped and tagged (image: default the version go build stamps; a release version of a commit not tagged with it is built with a warning)")
	switch args[0] {
	case "build":
		out := fs.String("out", "dist", "directory the binaries and SHA256SUMS are written to")
		targets := fs.String("targets", "", "OS/ARCH list (default: linux and darwin, amd64 and arm64)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if err := checkReleaseVersion(*version); err != nil {
			return err
		}
		warnUntagged(ctx, *root, *version)
		ts := ReleaseTargets
		if *targets != "" {
			ts = nil
			for _, s := range strings.Split(*targets, ",") {
				t, err := parseTarget(strings.TrimSpace(s))
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
		}
		return BuildRelease(ctx, *root, *version, *out, ts)
	case "image":
		arch := fs.String("arch", runtime.GOARCH, "the image's architecture: amd64 or arm64")
		out := fs.String("out", filepath.Join("dist", "ringcast-image.tar"), "the tarball written")
		certs := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of root CAs copied into the image")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return imageCmd(ctx, *root, *version, *arch, *certs, *out)
	case "prepare":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if err := checkReleaseVersion(*version); err != nil {
			return err
		}
		return Prepare(ctx, *root, *version)
	case "restore":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return Restore(ctx, *root)
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func imageCmd(ctx context.Context, root, version, arch, certsFile, out string) error {
	if arch != "amd64" && arch != "arm64" {
		return fmt.Errorf("ARCH=%q: want amd64 or arm64", arch)
	}
	if version != "" && !imageVersion.MatchString(version) {
		return fmt.Errorf("VERSION=%q: want letters, digits, '.', '_' or '-' (it is also the image's tag)", version)
	}
	if releaseVersion.MatchString(version) {
		warnUntagged(ctx, root, version)
	}
	certs, err := os.ReadFile(certsFile)
	if err != nil {
		return fmt.Errorf("CA certificates: %w (install the ca-certificates package, or pass CA_CERTS=FILE)", err)
	}
	tmp, err := os.MkdirTemp("", "ringcast-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "ringcast")
	if err := BuildBinary(ctx, root, version, Target{"linux", arch}, bin); err != nil {
		return err
	}
	if version == "" {
		// No VERSION: the binary is not stamped with one, and says what
		// `go build` of this tree says; the image is labelled and tagged
		// with that.
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return err
		}
		version = stampedVersion(bi)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	spec := ImageSpec{
		Binary: data, Arch: arch, Version: version, CACerts: certs,
		Revision: gitOutput(ctx, root, "rev-parse", "HEAD"),
		Created:  sourceDate(ctx, root),
	}
	img, err := BuildImage(spec)
	if err != nil {
		return err
	}
	tag, err := spec.Tag()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := WriteImage(out, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %s (linux/%s), image %s\nload it with: docker load -i %s\n", out, tag, arch, digest, out)
	return nil
}

// sourceDate is the time stamped into the image: SOURCE_DATE_EPOCH when
// set, else the commit's time, else the Unix epoch: never the clock, so a
// commit gives the same image on any machine.
func sourceDate(ctx context.Context, root string) time.Time {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s = gitOutput(ctx, root, "log", "-1", "--format=%ct")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

// gitOutput is git's trimmed output, or "" when git fails.
func gitOutput(ctx context.Context, dir string, args ...string) string {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
