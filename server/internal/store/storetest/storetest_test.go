package storetest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ringcast/ringcast/server/internal/store/storetest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(ringtest.Main(m)) }

// TestEveryStorePassesTheSuite runs the stream contract on every store the
// contract suites run on: memory, and JetStream on the shared
// nats-server.
func TestEveryStorePassesTheSuite(t *testing.T) {
	ringtest.ForEachStore(t, storetest.Run)
}
