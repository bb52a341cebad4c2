package ringcast

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestBackoffSettlesAsShared runs clients/conformance/backoff.json, the
// cases the TypeScript client's resolveBackoff checks too.
func TestBackoffSettlesAsShared(t *testing.T) {
	raw, err := os.ReadFile("../../conformance/backoff.json")
	if err != nil {
		t.Fatal(err)
	}
	type bounds struct {
		MinMs     float64 `json:"minMs"`
		InitialMs float64 `json:"initialMs"`
		MaxMs     float64 `json:"maxMs"`
		ResetMs   float64 `json:"resetMs"`
	}
	var file struct {
		Description string `json:"description"`
		Cases       []struct {
			Name  string `json:"name"`
			Given bounds `json:"given"`
			Want  bounds `json:"want"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no cases")
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, c := range file.Cases {
		got := Backoff{Min: ms(c.Given.MinMs), Initial: ms(c.Given.InitialMs), Max: ms(c.Given.MaxMs), Reset: ms(c.Given.ResetMs)}.normalized()
		want := Backoff{Min: ms(c.Want.MinMs), Initial: ms(c.Want.InitialMs), Max: ms(c.Want.MaxMs), Reset: ms(c.Want.ResetMs)}
		if got != want {
			t.Errorf("%s: %+v settles to %+v, want %+v", c.Name, c.Given, got, want)
		}
	}
}
