package sse

import (
	"errors"
	"strconv"

	"github.com/ringcast/ringcast/server/internal/core/epoch"
	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
)

// ErrMalformedID is returned by ParseLastEventID for a value that is not an
// id this face could have sent.
var ErrMalformedID = errors.New("sse: malformed Last-Event-ID: want <16 lower-case hex digits>-<decimal seq>[-<8 lower-case hex digits>]")

// FormatID renders the SSE id of the positioned event seq of ep whose
// fingerprint is fp: the epoch's text form (package epoch: 16 lower-case
// hex digits), "-", the seq in decimal, and, when fp is not 0, "-" and the
// fingerprint's text form (package fingerprint: 8 lower-case hex digits).
func FormatID(ep, seq uint64, fp uint32) string { return string(AppendID(nil, ep, seq, fp)) }

// AppendID appends FormatID(ep, seq, fp) to b.
func AppendID(b []byte, ep, seq uint64, fp uint32) []byte {
	b = append(epoch.Append(b, ep), '-')
	b = strconv.AppendUint(b, seq, 10)
	if fp != 0 {
		b = fingerprint.Append(append(b, '-'), fp)
	}
	return b
}

// ParseLastEventID parses an id produced by FormatID. It is strict: an
// epoch's exact text form (epoch.Parse), one "-", a decimal seq from 1 to
// 2^64-1 without sign or leading zeros, and optionally "-" and a
// fingerprint's exact text form (fingerprint.Parse: not 00000000). An id
// without a fingerprint (as this face sent them before they had one) has
// fp 0. Anything else is ErrMalformedID, so every accepted value formats
// back to itself.
func ParseLastEventID(s string) (ep, seq uint64, fp uint32, err error) {
	if len(s) < epoch.Len+2 || s[epoch.Len] != '-' {
		return 0, 0, 0, ErrMalformedID
	}
	ep, ok := epoch.Parse(s[:epoch.Len])
	if !ok {
		return 0, 0, 0, ErrMalformedID
	}
	digits := s[epoch.Len+1:]
	if n := len(digits) - fingerprint.Len - 1; n > 0 && digits[n] == '-' {
		if fp, ok = fingerprint.Parse(digits[n+1:]); !ok {
			return 0, 0, 0, ErrMalformedID
		}
		digits = digits[:n]
	}
	if len(digits) == 0 || len(digits) > 20 || digits[0] == '0' {
		return 0, 0, 0, ErrMalformedID
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, 0, 0, ErrMalformedID
		}
	}
	seq, err = strconv.ParseUint(digits, 10, 64)
	if err != nil { // out of range
		return 0, 0, 0, ErrMalformedID
	}
	return ep, seq, fp, nil
}
