// Package epoch owns an instance epoch: how one is drawn and its text
// form. An epoch is a non-zero 64-bit number naming the history a server
// serves (a memory hub draws one at start; a store derives its own); every
// position (seq) is relative to it. Its text form, 16 lower-case hex
// digits, appears in logs, metrics labels and SSE ids (package sse).
package epoch

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/ringcast/ringcast/server/internal/core/hexword"
)

// Len is the length of an epoch's text form.
const Len = 16

// New draws a random non-zero epoch from crypto/rand.
func New() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if e := binary.BigEndian.Uint64(b[:]); e != 0 {
			return e, nil
		}
	}
}

// Format renders an epoch as its text form: 16 lower-case hex digits,
// zero-padded.
func Format(e uint64) string { return string(Append(nil, e)) }

// Append appends Format(e) to b.
func Append(b []byte, e uint64) []byte { return hexword.Append(b, e, Len) }

// Parse reads an epoch's text form. It is strict: exactly 16 lower-case
// hex digits, so every accepted text formats back to itself.
func Parse(s string) (e uint64, ok bool) { return hexword.Parse(s, Len) }
