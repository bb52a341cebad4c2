// Package buildinfo reports what binary is running: the main module's
// version and the VCS revision `go build` stamps into a binary built from a
// checkout (runtime/debug build info). `ringcast version`, ServerStatus
// server_version and the ringcast_build_info metric all read it here.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// releaseTag is a release version: v1.2.3 or v1.2.3-rc.1 (a
// pseudo-version matches too, and names its revision anyway).
var releaseTag = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// Info is the identity of the running binary.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0, a
	// pseudo-version (v0.0.0-20261130120000-abcdef012345, "+dirty" when the
	// work tree had changes), or "(devel)" when Go could not tell.
	Version string
	// Revision is the VCS commit the binary was built from ("" when the
	// build was not stamped, e.g. `go run` or -buildvcs=false).
	Revision string
	// Time is the commit time (RFC 3339) or "".
	Time string
	// Modified reports uncommitted changes in the work tree at build time.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Read returns the running binary's Info. It never fails: a binary without
// build info (it does not happen with the go command) reports "(devel)".
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(devel)"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form used by `ringcast version`, ServerStatus and
// metrics: the version, then the revision when the build was stamped and the
// version does not already name it, e.g. "v1.2.0",
// "v0.0.0-20261130120000-0123456789ab+dirty", "(devel) (rev
// 0123456789ab)" or "(devel)". A release tag of a clean tree names its
// commit, so `go build` of a tagged commit says "v1.2.0", as the release
// binaries stamped with that version (tools/release) and `go install
// …@v1.2.0` do: one version string per build.
func (in Info) String() string {
	if in.Revision == "" || (releaseTag.MatchString(in.Version) && !in.Modified) {
		return in.Version
	}
	short := in.Revision
	if len(short) > 12 {
		short = short[:12]
	}
	if strings.Contains(in.Version, short) {
		return in.Version
	}
	rev := short
	if in.Modified {
		rev += "-dirty"
	}
	return in.Version + " (rev " + rev + ")"
}
