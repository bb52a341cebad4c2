package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestTokenMintsForTheCLI: `ringcast token` mints a token the server
// accepts; publish needs it (flag or RINGCAST_TOKEN) and stays inside its
// grant; status needs none; a key file that is not an HMAC secret is
// refused.
func TestTokenMintsForTheCLI(t *testing.T) {
	k := authtest.NewKeys(t)
	cfg := ringtest.Config()
	cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, k.SecretFile
	srv := ringtest.Start(t, cfg)
	cli := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return code, strings.TrimSpace(out.String()), errOut.String()
	}
	code, tok, errOut := cli("token", "--key-file", k.SecretFile, "--sub", "cli", "--publish", "gauges/eden", "--subscribe", "*", "--ttl", "10m")
	if code != 0 || strings.Count(tok, ".") != 2 {
		t.Fatalf("token: exit %d, %q, %s", code, tok, errOut)
	}
	fact := `{"topic":"gauges/eden/g-1","type":"t","data":{}}`
	if code, _, errOut := cli("publish", "--server", srv.URL, fact); code != 1 || !strings.Contains(errOut, "unauthenticated") {
		t.Fatalf("publish without a token: exit %d, %s", code, errOut)
	}
	if code, out, errOut := cli("publish", "--server", srv.URL, "--token", tok, fact); code != 0 || !strings.Contains(out, `"seq":2`) {
		t.Fatalf("publish with --token: exit %d, %s %s", code, out, errOut)
	}
	t.Setenv("RINGCAST_TOKEN", tok)
	if code, _, errOut := cli("publish", "--server", srv.URL, "--protocol", "grpcweb", `{"topic":"gauges/lune/g-1","type":"t","data":{}}`); code != 1 || !strings.Contains(errOut, "permission_denied") {
		t.Fatalf("publish outside the grant: exit %d, %s", code, errOut)
	}
	if code, out, errOut := cli("publish", "--server", srv.URL, "--protocol", "grpc", fact); code != 0 || !strings.Contains(out, `"seq":3`) {
		t.Fatalf("publish with RINGCAST_TOKEN: exit %d, %s %s", code, out, errOut)
	}
	t.Setenv("RINGCAST_TOKEN", "")
	if code, out, errOut := cli("status", "--server", srv.URL); code != 0 || !strings.Contains(out, `"headSeq":3`) {
		t.Fatalf("status without a token: exit %d, %s %s", code, out, errOut)
	}
	if code, _, errOut := cli("token", "--key-file", k.RSAFile, "--sub", "x"); code != 1 || !strings.Contains(errOut, "not an HMAC secret") {
		t.Fatalf("token with a PEM key file: exit %d, %s", code, errOut)
	}
}

// TestServeRefusesOpenNonLoopback: a non-loopback --addr without auth does
// not start, and the message names the way out.
func TestServeRefusesOpenNonLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--addr", "0.0.0.0:0", "--demo=false"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "--allow-unauthenticated") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"serve", "--addr", "127.0.0.1:0", "--auth", "jwt"}, strings.NewReader(""), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "--jwt-key-file") {
		t.Fatalf("jwt without a key file: exit %d, stderr %q", code, errOut.String())
	}
}

// TestTokenRefusesGrantsAndLifetimesThatMakeNoSense: a grant that matches
// no topic and a lifetime out of bounds are refused, the error names the
// flag, and no token is printed.
func TestTokenRefusesGrantsAndLifetimesThatMakeNoSense(t *testing.T) {
	k := authtest.NewKeys(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--publish", "BAD TOPIC"}, `--publish "BAD TOPIC" matches no topic`},
		{[]string{"--subscribe", "gauges//eden"}, `--subscribe "gauges//eden" matches no topic`},
		{[]string{"--subscribe", "*", "--publish", "Gauges/Eden"}, `--publish "Gauges/Eden" matches no topic`},
		{[]string{"--ttl", "876000h"}, "--ttl 876000h0m0s"},
		{[]string{"--ttl", "0s"}, "--ttl 0s"},
		{[]string{"--ttl", "-1h"}, "--ttl -1h0m0s"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"token", "--key-file", k.SecretFile, "--sub", "x"}, c.args...)
		if code := run(args, strings.NewReader(""), &out, &errOut); code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want an error naming %s", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"token", "--key-file", k.SecretFile, "--sub", "x", "--publish", "*", "--subscribe", "gauges/eden", "--ttl", "8760h"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Errorf("a year, * and a topic: exit %d, %s", code, errOut.String())
	}
}
