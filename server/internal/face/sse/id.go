package sse

import (
	"errors"
	"strconv"

	"github.com/ringcast/ringcast/server/internal/core/hub"
)

// ErrMalformedID is returned by ParseLastEventID for a value that is not an
// id this face could have sent.
var ErrMalformedID = errors.New("sse: malformed Last-Event-ID: want <16 lower-case hex digits>-<decimal seq>")

// FormatID renders the SSE id of the positioned event seq of epoch:
// the epoch as 16 lower-case hex digits, "-", the seq in decimal.
func FormatID(epoch, seq uint64) string { return string(AppendID(nil, epoch, seq)) }

// AppendID appends FormatID(epoch, seq) to b.
func AppendID(b []byte, epoch, seq uint64) []byte {
	b = append(hub.AppendEpoch(b, epoch), '-')
	return strconv.AppendUint(b, seq, 10)
}

// ParseLastEventID parses an id produced by FormatID. It is strict: exactly
// 16 lower-case hex digits, one "-", and a decimal seq from 1 to 2^64-1
// without sign or leading zeros. Anything else is ErrMalformedID, so every
// accepted value formats back to itself.
func ParseLastEventID(s string) (epoch, seq uint64, err error) {
	if len(s) < 18 || s[16] != '-' {
		return 0, 0, ErrMalformedID
	}
	for i := 0; i < 16; i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			epoch = epoch<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			epoch = epoch<<4 | uint64(c-'a'+10)
		default:
			return 0, 0, ErrMalformedID
		}
	}
	digits := s[17:]
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
	return epoch, seq, nil
}
