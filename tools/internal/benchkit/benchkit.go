// Package benchkit is what ringcast's benchmark programs (tools/fanbench,
// tools/jsanchor, tools/idlebench) share: their command lines' checks,
// latency quantiles and the process's CPU time.
package benchkit

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ParseFlags parses args with fs, which writes its usage and errors to
// stderr, and refuses arguments after the flags.
func ParseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// UndocumentedFlags are the names of fs's flags that the package comment
// of the Go source file at path does not list: it lists a flag as a line
// "//\t-name ..." before the package clause.
func UndocumentedFlags(path string, fs *flag.FlagSet) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, _, _ := strings.Cut(string(src), "package main")
	var missing []string
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(doc, "//\t-"+f.Name+" ") {
			missing = append(missing, f.Name)
		}
	})
	return missing, nil
}

// Quantiles are milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// QuantilesOf are d's exact quantiles, each the sample of its rank, to the
// microsecond; it sorts d.
func QuantilesOf(d []time.Duration) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(d)))) - 1
		return math.Round(float64(d[max(i, 0)])/1e3) / 1e3
	}
	return Quantiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

// Hist counts latencies in buckets growing by 2% from 1 µs: a quantile
// is within 2% of the true value. Its zero value is empty.
type Hist struct {
	counts [histBuckets]uint64
	max    time.Duration
	total  uint64
}

const histBuckets = 1200 // 1 µs × 1.02^1200 ≈ 21,000 s

var histLog = math.Log(1.02)

// Add counts d.
func (h *Hist) Add(d time.Duration) {
	us := float64(d) / 1e3
	b := 0
	if us > 1 {
		b = min(int(math.Log(us)/histLog)+1, histBuckets-1)
	}
	h.counts[b]++
	h.total++
	h.max = max(h.max, d)
}

// Merge adds o's counts to h's.
func (h *Hist) Merge(o *Hist) {
	for i, v := range o.counts {
		h.counts[i] += v
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// Quantiles reads each bucket as its upper bound.
func (h *Hist) Quantiles() Quantiles {
	if h.total == 0 {
		return Quantiles{}
	}
	at := func(q float64) float64 {
		rank := uint64(math.Ceil(q * float64(h.total)))
		var seen uint64
		for i, v := range h.counts {
			seen += v
			if seen >= rank {
				return Round(math.Pow(1.02, float64(i))/1e3, 3)
			}
		}
		return Round(float64(h.max)/1e6, 3)
	}
	return Quantiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: Round(float64(h.max)/1e6, 3)}
}

// Round is v rounded to d decimals, halves away from zero.
func Round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// CPUTime is the process's user and system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
