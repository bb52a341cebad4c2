package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestStringForms(t *testing.T) {
	settings := func(rev string, modified bool) []debug.BuildSetting {
		m := "false"
		if modified {
			m = "true"
		}
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: m}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}, Settings: settings(rev, false)}, "v1.2.0"},
		{"tagged pre-release", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0-rc.1"}, Settings: settings(rev, false)}, "v1.2.0-rc.1"},
		{"tagged, dirty", debug.BuildInfo{Main: debug.Module{Version: "v1.2.0+dirty"}, Settings: settings(rev, true)}, "v1.2.0+dirty (rev 0123456789ab-dirty)"},
		{"pseudo-version names the revision", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130120000-0123456789ab+dirty"}, Settings: settings(rev, true)}, "v0.0.0-20261130120000-0123456789ab+dirty"},
		{"devel with revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings(rev, true)}, "(devel) (rev 0123456789ab-dirty)"},
		{"unstamped", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
		{"empty", debug.BuildInfo{}, "(devel)"},
	} {
		if got := fromBuildInfo(&c.bi).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	in := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}, Settings: settings(rev, true)})
	if in.Revision != rev || !in.Modified || in.Time != "2026-11-30T12:00:00Z" {
		t.Errorf("fields: %+v", in)
	}
}
