package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// latencyHist is a log-linear histogram of durations: 16 sub-buckets per
// power of two of nanoseconds (about 6% resolution).
type latencyHist struct {
	n      int64
	max    time.Duration
	counts [64 * 16]uint32
}

func latencyBucket(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	e := bits.Len64(ns) - 5 // ns>>e is in [16, 32)
	return (e+1)*16 + int(ns>>e) - 16
}

// latencyLow is the lowest value of bucket i.
func latencyLow(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := i/16 - 1
	return uint64(i%16+16) << e
}

func (h *latencyHist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.n++
	h.max = max(h.max, d)
	h.counts[min(latencyBucket(uint64(d)), len(h.counts)-1)]++
}

func (h *latencyHist) merge(o *latencyHist) {
	h.n += o.n
	h.max = max(h.max, o.max)
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile is the middle of the bucket holding quantile q, in µs.
func (h *latencyHist) quantile(q float64) float64 {
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank && c > 0 {
			lo, hi := latencyLow(i), latencyLow(i+1)
			return float64(lo+hi) / 2 / 1e3
		}
	}
	return float64(h.max) / 1e3
}

func (h *latencyHist) report() *latencyReport {
	if h.n == 0 {
		return nil
	}
	return &latencyReport{
		Samples: h.n,
		P50:     round(h.quantile(0.50), 1),
		P90:     round(h.quantile(0.90), 1),
		P99:     round(h.quantile(0.99), 1),
		Max:     round(float64(h.max)/1e3, 1),
	}
}
