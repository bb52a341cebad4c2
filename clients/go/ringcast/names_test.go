package ringcast_test

import (
	"testing"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// TestSignalNames: the caught-up signal is named after the response's
// oneof field (caught_up), as an item kind and as a connection state; the
// TypeScript client and `ringcast tail` print the same names.
func TestSignalNames(t *testing.T) {
	caughtUp := (&ringcastv1.CaughtUp{}).ProtoReflect().Descriptor()
	var want string
	event := (&ringcastv1.SubscribeEventsResponse{}).ProtoReflect().Descriptor().Oneofs().ByName("event").Fields()
	for i := range event.Len() {
		if fd := event.Get(i); fd.Message() != nil && fd.Message().FullName() == caughtUp.FullName() {
			want = string(fd.Name())
		}
	}
	if want == "" {
		t.Fatal("no CaughtUp member in SubscribeEventsResponse's event oneof")
	}
	if got := ringcast.KindCaughtUp.String(); got != want {
		t.Errorf("KindCaughtUp = %q, want %q", got, want)
	}
	if got := ringcast.StateCaughtUp.String(); got != want {
		t.Errorf("StateCaughtUp = %q, want %q", got, want)
	}
	for k, want := range map[ringcast.Kind]string{ringcast.KindFact: "fact", ringcast.KindResynced: "resynced"} {
		if got := k.String(); got != want {
			t.Errorf("Kind %d = %q, want %q", k, got, want)
		}
	}
}
