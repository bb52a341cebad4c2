package bind_test

import (
	"errors"
	"net"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/bind"
)

// TestAgainRetriesOnlyWhileTheAddressIsInUse: a start that fails with an
// address in use is tried again until it succeeds; any other error is
// returned at once.
func TestAgainRetriesOnlyWhileTheAddressIsInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := held.Addr().String()
	calls := 0
	var ln net.Listener
	err = bind.Again(t, "listen on "+addr, func() (err error) {
		calls++
		if calls == 3 {
			held.Close() // the other owner lets go
		}
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil || calls != 3 {
		t.Fatalf("Again: %v after %d calls; want success on the 3rd, once the port is free", err, calls)
	}
	ln.Close()

	other := errors.New("refused: bad flag")
	calls = 0
	if err := bind.Again(t, "start", func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("Again: %v after %d calls; want %v after 1", err, calls, other)
	}
}
