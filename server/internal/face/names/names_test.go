package names

import (
	"strings"
	"testing"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestEnumPrefixes: every value of every enum of the proto starts with its
// enum's prefix, the zero value's name less UNSPECIFIED, so that the text
// name rule (names.go) applies to all of them.
func TestEnumPrefixes(t *testing.T) {
	enums := ringcastv1.File_ringcast_v1_ringcast_proto.Enums()
	for i := range enums.Len() {
		d := enums.Get(i)
		zero := d.Values().ByNumber(0)
		if zero == nil || !strings.HasSuffix(string(zero.Name()), "_UNSPECIFIED") {
			t.Errorf("%s: no zero value named …_UNSPECIFIED", d.Name())
			continue
		}
		p := enumPrefix(d)
		for j := range d.Values().Len() {
			if v := d.Values().Get(j); !strings.HasPrefix(string(v.Name()), p) || len(v.Name()) == len(p) {
				t.Errorf("%s.%s does not start with %q", d.Name(), v.Name(), p)
			}
		}
	}
}

// TestReasonNames: the text name of every Reason is its proto name less
// REASON_, in lower case; the SSE face's resync comment and tail's
// "reason" field print it.
func TestReasonNames(t *testing.T) {
	d := ringcastv1.Reason(0).Descriptor()
	seen := map[string]bool{}
	for i := range d.Values().Len() {
		v := d.Values().Get(i)
		want := strings.ToLower(strings.TrimPrefix(string(v.Name()), "REASON_"))
		got := ReasonName(ringcastv1.Reason(v.Number()))
		if got != want {
			t.Errorf("ReasonName(%s) = %q, want %q", v.Name(), got, want)
		}
		if seen[got] {
			t.Errorf("ReasonName(%s) = %q, given twice", v.Name(), got)
		}
		seen[got] = true
	}
	// The names docs/sse.md and tail's help show.
	for r, want := range map[ringcastv1.Reason]string{
		ringcastv1.Reason_REASON_EPOCH_MISMATCH:     "epoch_mismatch",
		ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING: "subscriber_lagging",
		ringcastv1.Reason(99):                       "99",
	} {
		if got := ReasonName(r); got != want {
			t.Errorf("ReasonName(%d) = %q, want %q", r, got, want)
		}
	}
}

// TestSnapshotNames: ParseSnapshot takes the text name of every Snapshot
// but the zero value, strictly for the query parameter and leniently for
// the command line.
func TestSnapshotNames(t *testing.T) {
	d := ringcastv1.Snapshot(0).Descriptor()
	var names []string
	for i := range d.Values().Len() {
		v := d.Values().Get(i)
		name := strings.ToLower(strings.TrimPrefix(string(v.Name()), "SNAPSHOT_"))
		for _, lenient := range []bool{false, true} {
			got, ok := ParseSnapshot(name, lenient)
			if v.Number() == 0 {
				if ok {
					t.Errorf("ParseSnapshot(%q, %v) = %v; the zero value has no name", name, lenient, got)
				}
				continue
			}
			if !ok || got != ringcastv1.Snapshot(v.Number()) {
				t.Errorf("ParseSnapshot(%q, %v) = %v, %v; want %s", name, lenient, got, ok, v.Name())
			}
		}
		if v.Number() != 0 {
			names = append(names, name)
			lax := strings.ToUpper(strings.ReplaceAll(name, "_", "-"))
			if got, ok := ParseSnapshot(lax, true); !ok || got != ringcastv1.Snapshot(v.Number()) {
				t.Errorf("ParseSnapshot(%q, true) = %v, %v; want %s", lax, got, ok, v.Name())
			}
			if got, ok := ParseSnapshot(lax, false); ok && lax != name {
				t.Errorf("ParseSnapshot(%q, false) = %v; strict takes the text name only", lax, got)
			}
		}
	}
	for _, lenient := range []bool{false, true} {
		if got, ok := ParseSnapshot("", lenient); !ok || got != ringcastv1.Snapshot_SNAPSHOT_RETAINED {
			t.Errorf(`ParseSnapshot("", %v) = %v, %v; want SNAPSHOT_RETAINED`, lenient, got, ok)
		}
		if got, ok := ParseSnapshot("everything", lenient); ok {
			t.Errorf(`ParseSnapshot("everything", %v) = %v; want no value`, lenient, got)
		}
	}
	if want := strings.Join(names, " or "); SnapshotNames != want {
		t.Errorf("SnapshotNames = %q, want %q", SnapshotNames, want)
	}
}
