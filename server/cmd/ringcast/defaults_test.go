package main

import (
	"io"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
)

// TestDemoIsOptIn: serve runs no demo feed unless told to, with --demo or
// RINGCAST_DEMO=true; --demo=false still parses.
func TestDemoIsOptIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want bool
	}{
		{name: "default", want: false},
		{name: "--demo", args: []string{"--demo"}, want: true},
		{name: "--demo=true", args: []string{"--demo=true"}, want: true},
		{name: "--demo=false", args: []string{"--demo=false"}, want: false},
		{name: "RINGCAST_DEMO=true", env: "true", want: true},
		{name: "RINGCAST_DEMO=true, --demo=false", args: []string{"--demo=false"}, env: "true", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("RINGCAST_DEMO", tc.env)
			}
			cfg := app.Defaults()
			fs, _ := newServeFlags(&cfg, io.Discard)
			if err := parseFlags(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			if cfg.Demo != tc.want {
				t.Errorf("demo %v, want %v", cfg.Demo, tc.want)
			}
		})
	}
}
