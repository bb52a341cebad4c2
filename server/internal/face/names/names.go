// Package names is the text names the server's faces and commands share:
// the proto's enums as text (a Reason, a Snapshot), the SSE face's event
// names, and the words of a token that the edge and the faces both say
// (the SSE token parameter, the expired-token message). It imports only
// the generated code, so the command line, the load generator and the
// edge read the names without importing a face, and a face without
// importing the edge.
package names

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// The text names of the proto's enums, as the SSE face (the snapshot query
// parameter, the resync comment) and the command line (tail's --snapshot
// flag and its "reason" field) spell them. They are not written down
// anywhere: one rule derives them from the generated descriptors. A
// value's text name is its proto name without the enum's prefix, in lower
// case: REASON_EPOCH_MISMATCH is "epoch_mismatch", SNAPSHOT_LATEST_PER_KEY
// is "latest_per_key". The prefix is the zero value's name less
// "UNSPECIFIED" (the proto's enums follow buf's ENUM_VALUE_PREFIX and
// ENUM_ZERO_VALUE_SUFFIX rules).
//
// The TypeScript client's names come from the same enums
// (clients/ts/src/names.ts); names_test.go checks these against the
// descriptors.

// textName is the text name of value n of enum d; a number the enum does
// not define is its decimal form, as the generated String methods print it.
func textName(d protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	v := d.Values().ByNumber(n)
	if v == nil {
		return strconv.Itoa(int(n))
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), enumPrefix(d)))
}

// enumPrefix is the prefix every value name of d starts with ("REASON_").
func enumPrefix(d protoreflect.EnumDescriptor) string {
	return strings.TrimSuffix(string(d.Values().ByNumber(0).Name()), "UNSPECIFIED")
}

// ReasonName is the text name of a Reason: "subscriber_lagging" for
// REASON_SUBSCRIBER_LAGGING.
func ReasonName(r ringcastv1.Reason) string {
	return textName(r.Descriptor(), r.Number())
}

// snapshotNames maps the text name of every Snapshot but the zero value to
// its value.
var snapshotNames = func() map[string]ringcastv1.Snapshot {
	d := ringcastv1.Snapshot(0).Descriptor()
	m := make(map[string]ringcastv1.Snapshot, d.Values().Len())
	for i := range d.Values().Len() {
		if n := d.Values().Get(i).Number(); n != 0 {
			m[textName(d, n)] = ringcastv1.Snapshot(n)
		}
	}
	return m
}()

// SnapshotNames lists the names ParseSnapshot accepts, for messages:
// "retained or latest_per_key".
var SnapshotNames = func() string {
	d := ringcastv1.Snapshot(0).Descriptor()
	var names []string
	for i := range d.Values().Len() {
		if n := d.Values().Get(i).Number(); n != 0 {
			names = append(names, textName(d, n))
		}
	}
	return strings.Join(names, " or ")
}()

// ParseSnapshot reads a Snapshot by its text name; "" is SNAPSHOT_RETAINED,
// the proto's default, sent explicitly. The zero value has no name.
//
// Strict (the snapshot query parameter) takes the text name only. Lenient
// (the command line's --snapshot) also takes it in any case and with "-"
// for "_": "Latest-Per-Key".
func ParseSnapshot(s string, lenient bool) (ringcastv1.Snapshot, bool) {
	if lenient {
		s = strings.ToLower(strings.ReplaceAll(s, "-", "_"))
	}
	if s == "" {
		return ringcastv1.Snapshot_SNAPSHOT_RETAINED, true
	}
	v, ok := snapshotNames[s]
	return v, ok
}

// The SSE face's event names (the `event:` field, docs/sse.md).
const (
	EventCommit   = "commit"
	EventStatus   = "status"
	EventProgress = "progress"
	EventCaughtUp = "caught-up"
	EventGap      = "gap"
	// EventTokenExpired ends a stream whose token expired (auth jwt):
	// open a new EventSource with a fresh token and the last id seen.
	EventTokenExpired = "token-expired"
)

// TokenParam is the query parameter GET /events takes a token in:
// EventSource cannot set headers (docs/security.md weighs the trade-off:
// URLs land in access logs). The edge reads the token from it; the SSE
// face accepts it among its query parameters.
const TokenParam = "access_token"

// TokenExpired is what a client is told when its token has expired, at
// a request or at a stream's end: the clients recognise it by this
// wording (reconnect with a fresh token), so it must equal
// tokenExpiredMessage in clients/conformance/defaults.json (a test
// checks).
const TokenExpired = "token expired"
