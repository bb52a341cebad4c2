package sse_test

import (
	"errors"
	"math"
	"testing"

	"github.com/ringcast/ringcast/server/internal/face/sse"
)

func TestParseLastEventID(t *testing.T) {
	good := []struct {
		in         string
		epoch, seq uint64
		fp         uint32
	}{
		{"00000000000000ff-1", 0xff, 1, 0},
		{"0123456789abcdef-42", 0x0123456789abcdef, 42, 0},
		{"ffffffffffffffff-18446744073709551615", math.MaxUint64, math.MaxUint64, 0},
		{"0123456789abcdef-42-deadbeef", 0x0123456789abcdef, 42, 0xdeadbeef},
		{"0123456789abcdef-1-00000001", 0x0123456789abcdef, 1, 1},
		{"ffffffffffffffff-18446744073709551615-ffffffff", math.MaxUint64, math.MaxUint64, math.MaxUint32},
	}
	for _, tc := range good {
		e, s, fp, err := sse.ParseLastEventID(tc.in)
		if err != nil || e != tc.epoch || s != tc.seq || fp != tc.fp {
			t.Errorf("ParseLastEventID(%q) = %x, %d, %x, %v; want %x, %d, %x", tc.in, e, s, fp, err, tc.epoch, tc.seq, tc.fp)
		}
		if back := sse.FormatID(e, s, fp); back != tc.in {
			t.Errorf("FormatID round trip: %q -> %q", tc.in, back)
		}
	}
	bad := []string{
		"", "-", "1", "0123456789abcdef", "0123456789abcdef-", "0123456789abcdef-0",
		"0123456789abcdef-01", "0123456789abcdef-+1", "0123456789abcdef--1", "0123456789ABCDEF-1",
		"123456789abcdef-1", "00123456789abcdef-1", "0123456789abcdeg-1", "0123456789abcdef-1 ",
		" 0123456789abcdef-1", "0123456789abcdef_1", "ffffffffffffffff-18446744073709551616",
		"0123456789abcdef-1x", "0123456789abcdef-1-2",
		"0123456789abcdef-1-00000000", "0123456789abcdef-1-DEADBEEF", "0123456789abcdef-1-deadbee",
		"0123456789abcdef-1-deadbeef0", "0123456789abcdef--deadbeef", "0123456789abcdef-deadbeef",
		"0123456789abcdef-01-deadbeef", "0123456789abcdef-1-deadbeef-", "0123456789abcdef-1-deadbeeg",
	}
	for _, in := range bad {
		if _, _, _, err := sse.ParseLastEventID(in); !errors.Is(err, sse.ErrMalformedID) {
			t.Errorf("ParseLastEventID(%q) err = %v, want ErrMalformedID", in, err)
		}
	}
}

// FuzzParseLastEventID: the parser never panics, and what it accepts
// formats back to exactly the input (so an id has one spelling).
func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"0123456789abcdef-42", "ffffffffffffffff-18446744073709551615", "x", "0123456789abcdef-0", "0000000000000000-1", "0123456789abcdef-42-deadbeef", "0123456789abcdef-42-00000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, q, fp, err := sse.ParseLastEventID(s)
		if err != nil {
			if !errors.Is(err, sse.ErrMalformedID) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		if q == 0 {
			t.Fatalf("accepted seq 0 in %q", s)
		}
		if back := sse.FormatID(e, q, fp); back != s {
			t.Fatalf("%q parsed to (%x, %d, %x) which formats as %q", s, e, q, fp, back)
		}
	})
}
