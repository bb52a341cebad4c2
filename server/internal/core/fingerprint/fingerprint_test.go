package fingerprint_test

import (
	"hash/crc32"
	"testing"
	"time"

	"github.com/ringcast/ringcast/server/internal/core/fingerprint"
)

func TestSumIsCRC32COfTheRecord(t *testing.T) {
	data, tp := []byte("commit"), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	want := crc32.Checksum(append(append(append([]byte(nil), data...), 0), tp...), crc32.MakeTable(crc32.Castagnoli))
	if got := fingerprint.Sum(data, tp); got != want {
		t.Fatalf("Sum = %08x, want %08x", got, want)
	}
	if fingerprint.Sum(data, "") == fingerprint.Sum(data, tp) {
		t.Fatal("the traceparent does not change the sum")
	}
}

func TestOfIsNeverZero(t *testing.T) {
	if fingerprint.Of(0) != 1 || fingerprint.Of(7) != 7 {
		t.Fatalf("Of(0) = %d, Of(7) = %d", fingerprint.Of(0), fingerprint.Of(7))
	}
}

func TestPosition(t *testing.T) {
	at := time.Unix(1796013215, 436381742)
	a := fingerprint.Position(5, at)
	if a == 0 || a != fingerprint.Position(5, at) {
		t.Fatalf("Position(5) = %08x: zero or not stable", a)
	}
	if a == fingerprint.Position(6, at) || a == fingerprint.Position(5, at.Add(time.Nanosecond)) {
		t.Fatal("Position ignores the seq or the time")
	}
}

func TestTextForm(t *testing.T) {
	for _, fp := range []uint32{1, 0xdeadbeef, 0xffffffff, 0x00a0000f} {
		s := fingerprint.Format(fp)
		if len(s) != fingerprint.Len {
			t.Fatalf("Format(%d) = %q", fp, s)
		}
		if got, ok := fingerprint.Parse(s); !ok || got != fp {
			t.Fatalf("Parse(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "00000000", "DEADBEEF", "deadbee", "deadbeef0", "deadbeeg", "+eadbeef"} {
		if fp, ok := fingerprint.Parse(s); ok {
			t.Errorf("Parse(%q) = %d, accepted", s, fp)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts is non-zero and
// formats back to exactly the input (a fingerprint has one spelling).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"deadbeef", "00000000", "00000001", "DEADBEEF", "", "0123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp, ok := fingerprint.Parse(s)
		if !ok {
			return
		}
		if fp == 0 || fingerprint.Format(fp) != s {
			t.Fatalf("Parse(%q) = %08x, which formats as %q", s, fp, fingerprint.Format(fp))
		}
	})
}
