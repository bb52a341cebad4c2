package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedDefaultsAreCurrent fails when clients/go/ringcast/defaults_gen.go or
// clients/ts/src/defaults_gen.ts differ from what defaults.json generates
// (run `go run ./clients/conformance/gendefaults` from the root).
func TestGeneratedDefaultsAreCurrent(t *testing.T) {
	files, err := render("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go run ./clients/conformance/gendefaults", name)
		}
	}
}
