package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/app"
)

// TestSmallWindowIsWarnedNotRefused: a window a plausible publish rate
// turns over within a few coalesce intervals (--window 16 --coalesce 10ms)
// starts, with one Warn line naming the values; the defaults log none.
func TestSmallWindowIsWarnedNotRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
		co     time.Duration
		warned bool
	}{{"defaults", 0, 0, false}, {"window 16, coalesce 10ms", 16, 10 * time.Millisecond, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := app.Defaults()
			cfg.Demo = false
			if tc.window != 0 {
				cfg.Window, cfg.Coalesce = tc.window, tc.co
			}
			cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			s, err := app.New(cfg)
			if err != nil {
				t.Fatalf("New: %v (a small window is only warned)", err)
			}
			s.Hub.Close()
			var warns []string
			for _, line := range strings.Split(buf.String(), "\n") {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "ring window turns over") {
					warns = append(warns, line)
				}
			}
			switch {
			case tc.warned && (len(warns) != 1 || !strings.Contains(warns[0], "window=16") || !strings.Contains(warns[0], "coalesce=10ms")):
				t.Fatalf("want one warning naming window=16 and coalesce=10ms, got %q", buf.String())
			case !tc.warned && len(warns) != 0:
				t.Fatalf("defaults warned: %q", warns)
			}
		})
	}
}
