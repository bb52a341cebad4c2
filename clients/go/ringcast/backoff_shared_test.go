package ringcast

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"connectrpc.com/connect"
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

// TestRetryAfterReadsAsShared runs clients/conformance/retry-after.json,
// the values the TypeScript and Python clients read the same way.
func TestRetryAfterReadsAsShared(t *testing.T) {
	raw, err := os.ReadFile("../../conformance/retry-after.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Header string  `json:"header"`
			Ms     float64 `json:"ms"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range file.Cases {
		refusal := connect.NewError(connect.CodeResourceExhausted, errors.New("slow down"))
		refusal.Meta().Set("Retry-After", c.Header)
		if got, want := retryAfter(refusal), time.Duration(c.Ms*float64(time.Millisecond)); got != want {
			t.Errorf("Retry-After %q: wait %v, want %v", c.Header, got, want)
		}
		other := connect.NewError(connect.CodeUnavailable, errors.New("down"))
		other.Meta().Set("Retry-After", c.Header)
		if got := retryAfter(other); got != 0 {
			t.Errorf("Retry-After %q on unavailable: wait %v, want none (only resource_exhausted asks for one)", c.Header, got)
		}
	}
}
