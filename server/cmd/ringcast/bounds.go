package main

import (
	"errors"
	"flag"
	"time"

	"github.com/ringcast/ringcast/server/internal/settings"
)

// bound is what one numeric or duration flag of serve accepts: its row of
// package settings, which checks a value (settings.Row.Check: from Min to
// Max, 0 when it means the default, negative when it means none, never NaN
// or ±Inf) and says what it accepts in the one wording the Validate
// methods of the packages that take the setting use too. The default is
// the flag's own (its flag.Flag's DefValue, the setting's default);
// TestServeFlagBounds checks it is accepted.
type bound struct {
	settings.Row
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
		out[i] = bound{Row: r, name: r.Name, min: r.Min, max: r.Max, zeroDefault: r.ZeroDefault, negativeNone: r.NegativeNone}
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
		v, _, ok := flagNumber(f)
		if !ok {
			continue
		}
		if err := b.Check(v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// formatBound renders a bound or value as the flag takes it (see
// settings.FormatValue).
func formatBound(v float64, isDuration bool) string { return settings.FormatValue(v, isDuration) }

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
		if _, _, ok := flagNumber(f); ok {
			f.Usage += " [" + b.Describe() + "]"
		}
	}
}
