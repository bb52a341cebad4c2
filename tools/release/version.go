package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"strings"
)

// warnings is where the builder's warnings go.
var warnings io.Writer = os.Stderr

// stampedVersion is what `ringcast version` prints for a binary built
// without -X main.version, read from its build info: the module version
// the go command stamped (a tag on a tagged clean commit, else a
// pseudo-version naming the commit, "+dirty" for a tree with changes),
// then " (rev …)" when that does not name the commit. It is the rule of
// server/internal/ops/buildinfo (Info.String), which this module cannot
// import; TestImageVersionIsTheBinarys holds the two together.
func stampedVersion(bi *buildinfo.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" || (releaseVersion.MatchString(v) && !modified) {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if strings.Contains(v, rev) {
		return v
	}
	if modified {
		rev += "-dirty"
	}
	return v + " (rev " + rev + ")"
}

// imageTag is version as an image tag: every run of characters a tag
// cannot hold (the "+" of "+dirty", the spaces and parentheses of
// "(devel) (rev …)") becomes one "-". The image's version label keeps
// version as it is.
func imageTag(version string) string {
	parts := strings.FieldsFunc(version, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-')
	})
	t := strings.Trim(strings.Join(parts, "-"), ".-")
	if len(t) > 128 {
		t = t[:128]
	}
	if t == "" {
		return "dev"
	}
	return t
}

// untagged is the warning for building release version from a tree that
// is not the commit tagged version, unchanged: its binaries would say
// version while `go build` of the same tree says something else. It is ""
// when HEAD is the tagged commit and the tree is clean.
func untagged(ctx context.Context, root, version string) string {
	head := gitOutput(ctx, root, "rev-parse", "HEAD")
	if head == "" {
		return fmt.Sprintf("warning: %s is not a git checkout: cannot tell whether it is the commit tagged %s", root, version)
	}
	var why string
	switch tagged := gitOutput(ctx, root, "rev-parse", "-q", "--verify", "refs/tags/"+version+"^{commit}"); {
	case tagged == "":
		why = "there is no tag " + version
	case tagged != head:
		why = fmt.Sprintf("tag %s is commit %.12s, HEAD is %.12s", version, tagged, head)
	case gitOutput(ctx, root, "status", "--porcelain", "--untracked-files=no") != "":
		why = "the work tree has uncommitted changes"
	default:
		return ""
	}
	return fmt.Sprintf("warning: building %s from an untagged commit (%s): the binaries will say %s, but `go build` of this tree does not; tag the release commit and build from it (docs/releasing.md)", version, why, version)
}

// warnUntagged writes untagged's warning, if any.
func warnUntagged(ctx context.Context, root, version string) {
	if w := untagged(ctx, root, version); w != "" {
		fmt.Fprintln(warnings, "release:", w)
	}
}
