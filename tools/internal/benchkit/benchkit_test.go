package benchkit

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	newFlags := func(n *int) *flag.FlagSet {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.IntVar(n, "n", 1, "a number")
		return fs
	}
	var n int
	if err := ParseFlags(newFlags(&n), []string{"-n", "7"}, io.Discard); err != nil || n != 7 {
		t.Fatalf("-n 7: n %d, %v", n, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-n", "2", "extra", "more"}, `unexpected argument "extra"`},
		{[]string{"-n", "x"}, "invalid value"},
		{[]string{"-nope"}, "not defined"},
	} {
		var errs strings.Builder
		err := ParseFlags(newFlags(&n), tc.args, &errs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
		// The flag package reports its own errors, with the usage, on
		// the writer it was given.
		if tc.want != `unexpected argument "extra"` && !strings.Contains(errs.String(), "Usage of bench") {
			t.Errorf("ParseFlags(%q) wrote %q, want the usage", tc.args, errs.String())
		}
	}
}

func TestUndocumentedFlags(t *testing.T) {
	src := `// Command bench does things.
//
//	-listed N   is listed
//	-also       is listed too
//
// Not a flag line: -inline is mentioned, not listed.
package main

//	-after is below the package clause
`
	path := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	for _, name := range []string{"listed", "also", "inline", "after", "never"} {
		fs.Bool(name, false, "")
	}
	missing, err := UndocumentedFlags(path, fs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"after", "inline", "never"}; !slices.Equal(missing, want) {
		t.Fatalf("undocumented %q, want %q", missing, want)
	}
	if _, err := UndocumentedFlags(filepath.Join(t.TempDir(), "none.go"), fs); err == nil {
		t.Fatal("a missing file: want an error")
	}
}

func TestQuantilesOf(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	q := QuantilesOf(d)
	if q.P50 != 50 || q.P90 != 90 || q.P99 != 99 || q.Max != 100 {
		t.Fatalf("quantiles %+v", q)
	}
	if one := QuantilesOf([]time.Duration{1234567}); one != (Quantiles{1.235, 1.235, 1.235, 1.235}) {
		t.Fatalf("one sample of 1.234567 ms: %+v, want 1.235 ms for each", one)
	}
	if (QuantilesOf(nil) != Quantiles{}) {
		t.Fatal("no samples: want zeros")
	}
}

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for i := 1; i <= 1000; i++ {
		h.Add(time.Duration(i) * 10 * time.Microsecond) // 0.01 to 10 ms
	}
	q := h.Quantiles()
	near := func(got, want float64) bool { return got >= want && got <= want*1.021 }
	if !near(q.P50, 5) || !near(q.P99, 9.9) || q.Max != 10 {
		t.Fatalf("quantiles %+v", q)
	}
	if (new(Hist).Quantiles() != Quantiles{}) {
		t.Fatal("no samples: want zeros")
	}
}

// TestHistMerge: two histograms merged read as one that counted both's
// samples.
func TestHistMerge(t *testing.T) {
	var a, b, all Hist
	for i := 1; i <= 1000; i++ {
		d := time.Duration(i) * 7 * time.Microsecond
		if i%3 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
		all.Add(d)
	}
	a.Merge(&b)
	if a != all {
		t.Fatalf("merged %+v, want %+v", a.Quantiles(), all.Quantiles())
	}
}

func TestRound(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		d    int
		want float64
	}{
		{1.2345, 2, 1.23},
		{1.235, 1, 1.2},
		{2.5, 0, 3},
		{-2.5, 0, -3},
		{12.34, 0, 12},
	} {
		if got := Round(tc.v, tc.d); got != tc.want {
			t.Errorf("Round(%v, %d) = %v, want %v", tc.v, tc.d, got, tc.want)
		}
	}
}
