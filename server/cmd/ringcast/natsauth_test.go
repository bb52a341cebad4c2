package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/store/natslog"
)

// operatorNATS starts a nats-server in operator (JWT) mode on loopback:
// an operator trusting a system account and an account with JetStream.
// It returns the server and a function writing a .creds file for a new
// user of the JetStream account, with perms (nil: no restriction).
func operatorNATS(t *testing.T) (*server.Server, func(name string, perms *jwt.Permissions) string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, err := okp.PublicKey()
	must(err)
	ojwt, err := jwt.NewOperatorClaims(opub).Encode(okp)
	must(err)
	operator, err := jwt.DecodeOperatorClaims(ojwt)
	must(err)
	resolver := &server.MemAccResolver{}
	account := func(jetStream bool) nkeys.KeyPair {
		kp, err := nkeys.CreateAccount()
		must(err)
		pub, err := kp.PublicKey()
		must(err)
		ac := jwt.NewAccountClaims(pub)
		if jetStream {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		ajwt, err := ac.Encode(okp)
		must(err)
		must(resolver.Store(pub, ajwt))
		return kp
	}
	sys, app := account(false), account(true)
	spub, err := sys.PublicKey()
	must(err)
	ns, err := natslog.StartServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		TrustedOperators: []*jwt.OperatorClaims{operator}, AccountResolver: resolver, SystemAccount: spub,
	})
	must(err)
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns, func(name string, perms *jwt.Permissions) string { return writeCreds(t, app, name, perms) }
}

// writeCreds writes a .creds file (user JWT and seed) for a new user of
// account, with perms (nil: no restriction).
func writeCreds(t *testing.T, account nkeys.KeyPair, name string, perms *jwt.Permissions) string {
	t.Helper()
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	if perms != nil {
		uc.Permissions = *perms
	}
	ujwt, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// publishAndRead publishes one keyed commit through the ringcast at url
// and reads it back with a retained snapshot; it returns the receipt.
func publishAndRead(t *testing.T, url string) *ringcastv1.PublishResponse {
	t.Helper()
	c := ringcast.NewClient(url).RPC()
	res, err := c.Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{
		Facts: []*ringcastv1.Fact{keyed("a", 1)}, IdempotencyKey: "p1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, m := range readAll(t, c, &ringcastv1.SubscribeEventsRequest{EndAtHead: true}) {
		if m.GetCommit() != nil {
			seqs = append(seqs, m.Seq)
		}
	}
	if len(seqs) != 1 || seqs[0] != res.Msg.Seq {
		t.Fatalf("read back commits %v, want the one published at %d", seqs, res.Msg.Seq)
	}
	return res.Msg
}

// TestServeOnJetStreamWithCredentialsFile: "ringcast serve --store
// jetstream --nats-creds FILE" against a nats-server in operator (JWT)
// mode publishes and subscribes, and its stream lives in the account the
// credentials name. The user may publish only on the stream's subject and
// JetStream's API, and subscribe only to inboxes (docs/scaling.md): enough
// for Publish, a retried key and PublishBatch.
func TestServeOnJetStreamWithCredentialsFile(t *testing.T) {
	ns, creds := operatorNATS(t)
	perms := &jwt.Permissions{
		Pub: jwt.Permission{Allow: jwt.StringList{natslog.Subject("events"), "$KV." + natslog.MetaBucket + ".>", "$JS.API.>"}},
		Sub: jwt.Permission{Allow: jwt.StringList{"_INBOX.>"}},
	}
	_, url, _ := startChild(t, "--addr", "127.0.0.1:0", "--demo=false",
		"--store", "jetstream", "--nats-url", ns.ClientURL(), "--nats-creds", creds("ringcast", perms), "--nats-stream", "events")
	r := publishAndRead(t, url)
	again, err := ringcast.NewClient(url).RPC().Publish(context.Background(), connect.NewRequest(&ringcastv1.PublishRequest{
		Facts: []*ringcastv1.Fact{keyed("a", 1)}, IdempotencyKey: "p1",
	}))
	if err != nil || !again.Msg.Duplicate || again.Msg.Seq != r.Seq {
		t.Fatalf("retried key: %v, %v; want a duplicate of seq %d", again, err, r.Seq)
	}
	batch, err := ringcast.NewClient(url).RPC().PublishBatch(context.Background(), connect.NewRequest(&ringcastv1.PublishBatchRequest{
		Commits: []*ringcastv1.PublishRequest{{Facts: []*ringcastv1.Fact{keyed("b", 1)}, IdempotencyKey: "p2"}, {Facts: []*ringcastv1.Fact{keyed("c", 1)}}},
	}))
	if err != nil || len(batch.Msg.Receipts) != 2 || batch.Msg.Receipts[1].Seq != r.Seq+2 {
		t.Fatalf("batch: %v, %v; want seqs %d and %d", batch, err, r.Seq+1, r.Seq+2)
	}
	r = batch.Msg.Receipts[1]

	// Another user of the same account sees the stream and the commit.
	nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(creds("inspector", nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "events")
	if err != nil {
		t.Fatalf("the stream in the credentials' account: %v", err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.LastSeq != r.Seq {
		t.Fatalf("stream info %+v, %v; want last seq %d", info, err, r.Seq)
	}
}

// TestServeOnJetStreamWithPasswordInTheURL: nats://user:pass@host, given
// as RINGCAST_NATS_URL, against a nats-server with user/password
// authentication.
func TestServeOnJetStreamWithPasswordInTheURL(t *testing.T) {
	ns, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "ringcast", Password: "s3cret",
		JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	// As docs/scaling.md advises: in the environment, not on the command line.
	t.Setenv("RINGCAST_NATS_URL", fmt.Sprintf("nats://ringcast:s3cret@%s", ns.Addr()))
	_, url, _ := startChild(t, "--addr", "127.0.0.1:0", "--demo=false", "--store", "jetstream")
	publishAndRead(t, url)
}

// TestServeRefusesBadNATSCredentials: credentials NATS does not accept, a
// credentials file that is missing or not one, and a wrong password in the
// URL stop "ringcast serve" at start with exit status 1 and an error that
// names the cause; the password is not printed.
func TestServeRefusesBadNATSCredentials(t *testing.T) {
	ns, _ := operatorNATS(t)
	stranger, _ := nkeys.CreateAccount() // an account the server does not know
	garbage := filepath.Join(t.TempDir(), "garbage.creds")
	if err := os.WriteFile(garbage, []byte("not a credentials file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw, err := natslog.StartServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "ringcast", Password: "s3cret",
		JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Shutdown(); pw.WaitForShutdown() })
	serve := []string{"serve", "--addr", "127.0.0.1:0", "--demo=false", "--store", "jetstream"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown account", []string{"--nats-url", ns.ClientURL(), "--nats-creds", writeCreds(t, stranger, "stranger", nil)}, []string{"connect to NATS", "Authorization Violation", "refused the credentials"}},
		{"no credentials", []string{"--nats-url", ns.ClientURL()}, []string{"connect to NATS", "Authorization Violation", "refused the credentials"}},
		{"missing file", []string{"--nats-url", ns.ClientURL(), "--nats-creds", filepath.Join(t.TempDir(), "missing.creds")}, []string{"nats-creds", "missing.creds", "no such file"}},
		{"not a creds file", []string{"--nats-url", ns.ClientURL(), "--nats-creds", garbage}, []string{"nats-creds", "garbage.creds", "not a NATS credentials file"}},
		{"wrong password", []string{"--nats-url", fmt.Sprintf("nats://ringcast:wrong@%s", pw.Addr())}, []string{"connect to NATS", "Authorization Violation", "refused the credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append(serve, tc.args...), strings.NewReader(""), &out, &errOut)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q lacks %q", errOut.String(), w)
				}
			}
			if strings.Contains(errOut.String(), "wrong") {
				t.Errorf("stderr prints the password: %q", errOut.String())
			}
		})
	}
}
