package sse

import (
	"errors"
	"strconv"

	"github.com/ringcast/ringcast/server/internal/core/epoch"
)

// ErrMalformedID is returned by ParseLastEventID for a value that is not an
// id this face could have sent.
var ErrMalformedID = errors.New("sse: malformed Last-Event-ID: want <16 lower-case hex digits>-<decimal seq>")

// FormatID renders the SSE id of the positioned event seq of ep: the
// epoch's text form (package epoch: 16 lower-case hex digits), "-", the seq
// in decimal.
func FormatID(ep, seq uint64) string { return string(AppendID(nil, ep, seq)) }

// AppendID appends FormatID(ep, seq) to b.
func AppendID(b []byte, ep, seq uint64) []byte {
	b = append(epoch.Append(b, ep), '-')
	return strconv.AppendUint(b, seq, 10)
}

// ParseLastEventID parses an id produced by FormatID. It is strict: an
// epoch's exact text form (epoch.Parse), one "-", and a decimal seq from 1
// to 2^64-1 without sign or leading zeros. Anything else is ErrMalformedID,
// so every accepted value formats back to itself.
func ParseLastEventID(s string) (ep, seq uint64, err error) {
	if len(s) < epoch.Len+2 || s[epoch.Len] != '-' {
		return 0, 0, ErrMalformedID
	}
	ep, ok := epoch.Parse(s[:epoch.Len])
	if !ok {
		return 0, 0, ErrMalformedID
	}
	digits := s[epoch.Len+1:]
	if len(digits) > 20 || digits[0] == '0' {
		return 0, 0, ErrMalformedID
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, 0, ErrMalformedID
		}
	}
	seq, err = strconv.ParseUint(digits, 10, 64)
	if err != nil { // out of range
		return 0, 0, ErrMalformedID
	}
	return ep, seq, nil
}
