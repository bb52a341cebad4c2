package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ringcast/ringcast/server/internal/settings"
)

// bound is what one numeric or duration flag of serve accepts: a value
// from min to max (inclusive; a duration's in nanoseconds), 0 when it means
// the flag's default, and any negative value when it means "none" (no
// bound, disabled). NaN and ±Inf are never accepted. The default is the
// flag's own (its flag.Flag's DefValue, the setting's default);
// TestServeFlagBounds checks it is accepted.
type bound struct {
	name         string
	min, max     float64
	zeroDefault  bool // 0: the flag's default
	negativeNone bool // negative: none
}

// serveBounds has one row per numeric and duration flag of serve (a flag
// without one fails TestServeFlagBounds): package settings' table, the one
// owner of each setting's default and bounds. To add a flag, add its
// setting there. docs/limits.md, "Flag bounds", lists the same.
var serveBounds = boundsOf(settings.All)

// boundsOf is the bounds of the settings rows.
func boundsOf(rows []settings.Row) []bound {
	out := make([]bound, len(rows))
	for i, r := range rows {
		out[i] = bound{name: r.Name, min: r.Min, max: r.Max, zeroDefault: r.ZeroDefault, negativeNone: r.NegativeNone}
	}
	return out
}

// d is a duration as a bound.
func d(v time.Duration) float64 { return float64(v) }

// checkBounds reports every flag of fs outside its row of bounds, one
// error each, naming the flag.
func checkBounds(fs *flag.FlagSet, bounds []bound) error {
	var errs []error
	for _, b := range bounds {
		f := fs.Lookup(b.name)
		if f == nil {
			continue
		}
		v, isDuration, ok := flagNumber(f)
		if !ok {
			continue
		}
		if err := b.check(v, isDuration, f.Value.String()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// check reports v (a duration's in nanoseconds; raw as given) outside b.
func (b bound) check(v float64, isDuration bool, raw string) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s must be a finite number %s, not %s", b.name, b.describe(isDuration), raw)
	case v == 0 && b.zeroDefault, v < 0 && b.negativeNone, b.min <= v && v <= b.max:
		return nil
	}
	return fmt.Errorf("%s must be %s, not %s", b.name, b.describe(isDuration), raw)
}

// describe says what b accepts: "between 1 and 16777216 (or negative: no
// bound)".
func (b bound) describe(isDuration bool) string {
	s := "between " + formatBound(b.min, isDuration) + " and " + formatBound(b.max, isDuration)
	var or []string
	if b.zeroDefault {
		or = append(or, "0: the default")
	}
	if b.negativeNone {
		or = append(or, "negative: none")
	}
	if len(or) > 0 {
		s += " (or " + strings.Join(or, "; ") + ")"
	}
	return s
}

// formatBound renders a bound or value as the flag takes it: a duration
// without trailing zero units ("1h", not "1h0m0s"), a number in full.
func formatBound(v float64, isDuration bool) string {
	if !isDuration {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := time.Duration(v).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// flagNumber is a numeric or duration flag's value as a float64 (a
// duration's in nanoseconds); ok is false for other flags.
func flagNumber(f *flag.Flag) (v float64, isDuration, ok bool) {
	g, isGetter := f.Value.(flag.Getter)
	if !isGetter {
		return 0, false, false
	}
	switch x := g.Get().(type) {
	case int:
		return float64(x), false, true
	case int64:
		return float64(x), false, true
	case uint:
		return float64(x), false, true
	case uint64:
		return float64(x), false, true
	case float64:
		return x, false, true
	case time.Duration:
		return float64(x), true, true
	}
	return 0, false, false
}

// describeBounds appends to the help of every flag with a row what it
// accepts.
func describeBounds(fs *flag.FlagSet, bounds []bound) {
	for _, b := range bounds {
		f := fs.Lookup(b.name)
		if f == nil {
			continue
		}
		_, isDuration, ok := flagNumber(f)
		if ok {
			f.Usage += " [" + b.describe(isDuration) + "]"
		}
	}
}
