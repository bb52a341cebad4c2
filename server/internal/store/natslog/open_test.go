package natslog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// TestExistingStreamIsUsedAsIs: a second Open with other limits uses the
// stream as it is and reports its real limits; the epoch is the same.
func TestExistingStreamIsUsedAsIs(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	first := openLog(t, nc, natslog.Options{Stream: "events", MaxMsgs: 30, MaxAge: time.Hour, Duplicates: time.Minute})
	again := openLog(t, nc, natslog.Options{Stream: "events", MaxMsgs: 5, Replicas: 1})
	c := again.Config()
	if c.MaxMsgs != 30 || c.MaxAge != time.Hour || c.Duplicates != time.Minute || again.Epoch() != first.Epoch() {
		t.Fatalf("reopened stream: limits %d msgs, %v, dup %v, epoch %x; want the creator's 30, 1h, 1m and epoch %x",
			c.MaxMsgs, c.MaxAge, c.Duplicates, again.Epoch(), first.Epoch())
	}
	other := openLog(t, nc, natslog.Options{Stream: "other"})
	if other.Epoch() == first.Epoch() {
		t.Fatal("two streams share an epoch")
	}
}

// TestConnectWithCredentialsInTheURL: nats://user:pass@ URLs authenticate;
// wrong credentials and unreachable servers are errors at once.
func TestConnectWithCredentialsInTheURL(t *testing.T) {
	ns, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "ringcast", Password: "s3cret", JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	addr := ns.Addr().String()
	nc, err := natslog.Connect([]string{"nats://127.0.0.1:1", fmt.Sprintf("nats://ringcast:s3cret@%s", addr)}, "", nil)
	if err != nil {
		t.Fatalf("connect with user:pass@: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := natslog.Open(ctx, nc, natslog.Options{}); err != nil {
		t.Fatal(err)
	}
	if nc, err := natslog.Connect([]string{fmt.Sprintf("nats://ringcast:wrong@%s", addr)}, "", nil); err == nil {
		nc.Close()
		t.Fatal("wrong password connected")
	}
	if _, err := natslog.Connect([]string{"nats://127.0.0.1:1"}, t.TempDir()+"/missing.creds", nil); err == nil {
		t.Fatal("a missing credentials file is not an error")
	}
}

// TestZeroOptionsTakeTheExportedDefaults: the stream Open creates with zero
// Options has the defaults natslog exports (which the serve flags show).
func TestZeroOptionsTakeTheExportedDefaults(t *testing.T) {
	_, nc := embedded(t, t.TempDir())
	c := openLog(t, nc, natslog.Options{}).Config()
	if c.Name != natslog.DefaultStream || c.Replicas != natslog.DefaultReplicas || c.Duplicates != natslog.DefaultDuplicates ||
		!c.AllowAtomicPublish || c.Subjects[0] != natslog.Subject(natslog.DefaultStream) {
		t.Fatalf("stream config %+v, want the exported defaults", c)
	}
}
