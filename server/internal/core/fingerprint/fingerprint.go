// Package fingerprint owns a commit's fingerprint: the short number that
// names the commit at a seq, so that a cursor names its commit and not
// only its position (docs/protocol.md, "Positions"). A fingerprint is a
// non-zero 32-bit number; 0 stands for "none" (a cursor without one).
//
// What it is computed from depends on the store, and in each it is
// derived from what the store keeps of the commit, so that every replica
// and every restart computes the same one:
//
//   - a durable store: the CRC-32C of the commit's stored record (the
//     bytes of the commit message, a zero byte, its traceparent), which
//     the store also keeps as the commit's checksum (Sum);
//   - the memory store, whose log lives and dies with the process (its
//     epoch names it): the CRC-32C of the event's seq and event time
//     (Position), which costs the publish nothing.
//
// Its text form, 8 lower-case hex digits, is part of SSE ids (package sse)
// and of the clients' cursor text.
package fingerprint

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/hexword"
)

// Len is the length of a fingerprint's text form.
const Len = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum is the CRC-32C of a stored commit record: its message bytes, a zero
// byte, its traceparent. A durable store keeps it as the commit's checksum;
// Of(Sum(…)) is the commit's fingerprint.
func Sum(data []byte, traceparent string) uint32 {
	crc := crc32.Update(0, castagnoli, data)
	crc = crc32.Update(crc, castagnoli, []byte{0})
	return crc32.Update(crc, castagnoli, []byte(traceparent))
}

// Of is the fingerprint of a CRC: the CRC itself, or 1 when it is 0 (0
// means "none").
func Of(crc uint32) uint32 {
	if crc == 0 {
		return 1
	}
	return crc
}

// Position is the fingerprint of a memory-store event: the CRC-32C of its
// seq and event time (Unix nanoseconds), both big-endian.
func Position(seq uint64, at time.Time) uint32 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	binary.BigEndian.PutUint64(b[8:], uint64(at.UnixNano()))
	return Of(crc32.Checksum(b[:], castagnoli))
}

// Format renders a fingerprint as its text form: 8 lower-case hex digits,
// zero-padded.
func Format(fp uint32) string { return string(Append(nil, fp)) }

// Append appends Format(fp) to b.
func Append(b []byte, fp uint32) []byte { return hexword.Append(b, uint64(fp), Len) }

// Parse reads a fingerprint's text form. It is strict: exactly 8
// lower-case hex digits, not all zero (0 is no fingerprint, written by
// leaving the text out), so every accepted text formats back to itself.
func Parse(s string) (fp uint32, ok bool) {
	v, ok := hexword.Parse(s, Len)
	return uint32(v), ok && v != 0
}
