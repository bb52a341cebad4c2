// Package hexword is the text form the stream's fixed-width numbers share
// (an epoch's 16 digits, a fingerprint's 8): lower-case hex, zero-padded
// to a fixed width, parsed strictly so every accepted text formats back to
// itself.
package hexword

// Append appends the low digits×4 bits of v to b as digits lower-case hex
// digits, zero-padded.
func Append(b []byte, v uint64, digits int) []byte {
	const hex = "0123456789abcdef"
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b = append(b, hex[v>>uint(shift)&0xf])
	}
	return b
}

// Parse reads exactly digits lower-case hex digits (at most 16).
func Parse(s string, digits int) (v uint64, ok bool) {
	if len(s) != digits || digits > 16 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
