package ringcast

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// cursorVersion is the first field of a serialised cursor. A later format
// gets a new prefix; ParseCursor keeps accepting the old ones: "rc1" is a
// cursor without a fingerprint, "rc2" one with.
const (
	cursorVersion            = "rc1"
	cursorVersionFingerprint = "rc2"
)

// Cursor is the position of what the application has consumed on one
// server instance: commit Seq of instance Epoch is fully consumed when Fact
// is 0; when Fact = K > 0, only its facts with index < K are. Fingerprint
// names the commit at Seq (the fingerprint of the positioned response that
// moved the cursor there): a server whose log holds another commit at Seq
// under the same epoch (a restored or replaced store) answers with a
// resync instead of carrying the cursor onto other commits. 0 means none:
// the cursor is then served by its epoch and seq alone.
//
// The zero Cursor means "nothing consumed": a subscription from it starts
// with a snapshot. A Cursor is a small value: copy it freely.
//
// Its text form, used by MarshalText, MarshalJSON (a JSON string) and
// String, is
//
//	rc2.<epoch: 16 lower-case hex digits>.<seq: decimal>.<fact: decimal>.<fingerprint: 8 lower-case hex digits>
//
// e.g. "rc2.9f86d081884c7d65.1042.0.5d41402a", or, for a cursor without a
// fingerprint (Fingerprint 0),
//
//	rc1.<epoch: 16 lower-case hex digits>.<seq: decimal>.<fact: decimal>
//
// e.g. "rc1.9f86d081884c7d65.1042.0". Treat it as opaque: the prefix is a
// format version, so the form may change and old strings stay valid.
type Cursor struct {
	Epoch       uint64 // the instance_epoch the position belongs to
	Seq         uint64 // the last commit (or position) touched
	Fact        uint32 // 0: commit Seq fully consumed; K > 0: facts [0, K) consumed
	Fingerprint uint32 // the fingerprint of the commit at Seq; 0: none
}

// IsZero reports whether c is the zero cursor (start from a snapshot).
func (c Cursor) IsZero() bool { return c == Cursor{} }

// String returns the text form.
func (c Cursor) String() string {
	if c.Fingerprint != 0 {
		return fmt.Sprintf("%s.%016x.%d.%d.%08x", cursorVersionFingerprint, c.Epoch, c.Seq, c.Fact, c.Fingerprint)
	}
	return fmt.Sprintf("%s.%016x.%d.%d", cursorVersion, c.Epoch, c.Seq, c.Fact)
}

// MarshalText implements encoding.TextMarshaler (and so JSON, as a string).
func (c Cursor) MarshalText() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseCursor's
// rules.
func (c *Cursor) UnmarshalText(b []byte) error {
	p, err := ParseCursor(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

// ErrMalformedCursor is wrapped by every ParseCursor error.
var ErrMalformedCursor = errors.New("malformed ringcast cursor")

// ParseCursor parses the text form strictly: the version prefix, exactly 16
// lower-case hex digits of epoch, canonical decimals (no sign, no leading
// zeros, no spaces) for seq and fact, and for "rc2" exactly 8 lower-case
// hex digits of fingerprint, not all zero. It also rejects shapes no
// server position can have: a fact offset or a fingerprint without a seq,
// and a seq without an epoch.
func ParseCursor(s string) (Cursor, error) {
	fail := func(format string, args ...any) (Cursor, error) {
		return Cursor{}, fmt.Errorf("%w %q: %s", ErrMalformedCursor, truncate(s, 64), fmt.Sprintf(format, args...))
	}
	parts := strings.Split(s, ".")
	switch {
	case parts[0] == cursorVersion && len(parts) != 4:
		return fail("want 4 dot-separated fields (%s.<epoch>.<seq>.<fact>), got %d", cursorVersion, len(parts))
	case parts[0] == cursorVersionFingerprint && len(parts) != 5:
		return fail("want 5 dot-separated fields (%s.<epoch>.<seq>.<fact>.<fingerprint>), got %d", cursorVersionFingerprint, len(parts))
	case parts[0] != cursorVersion && parts[0] != cursorVersionFingerprint:
		return fail("unknown format version %q (want %q or %q)", truncate(parts[0], 16), cursorVersion, cursorVersionFingerprint)
	}
	if len(parts[1]) != 16 || strings.IndexFunc(parts[1], notLowerHex) >= 0 {
		return fail("epoch must be 16 lower-case hex digits")
	}
	epoch, err := strconv.ParseUint(parts[1], 16, 64)
	if err != nil {
		return fail("epoch: %v", err)
	}
	seq, err := parseCanonicalUint(parts[2], 64)
	if err != nil {
		return fail("seq: %v", err)
	}
	fact, err := parseCanonicalUint(parts[3], 32)
	if err != nil {
		return fail("fact: %v", err)
	}
	c := Cursor{Epoch: epoch, Seq: seq, Fact: uint32(fact)}
	if len(parts) == 5 {
		if len(parts[4]) != 8 || strings.IndexFunc(parts[4], notLowerHex) >= 0 {
			return fail("fingerprint must be 8 lower-case hex digits")
		}
		fp, err := strconv.ParseUint(parts[4], 16, 32)
		if err != nil || fp == 0 {
			return fail("fingerprint must not be 0 (a cursor without one is written %s)", cursorVersion)
		}
		c.Fingerprint = uint32(fp)
	}
	if err := c.validate(); err != nil {
		return fail("%v", err)
	}
	return c, nil
}

// validate rejects cursors no sequence of server events can produce.
func (c Cursor) validate() error {
	switch {
	case c.Fact > 0 && c.Seq == 0:
		return errors.New("a fact offset needs a seq")
	case c.Fingerprint != 0 && c.Seq == 0:
		return errors.New("a fingerprint needs a seq")
	case c.Seq > 0 && c.Epoch == 0:
		return errors.New("a seq needs a non-zero epoch")
	}
	return nil
}

func parseCanonicalUint(s string, bits int) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, errors.New("leading zero")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("not a decimal number")
		}
	}
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, errors.New("out of range")
	}
	return n, nil
}

func notLowerHex(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
