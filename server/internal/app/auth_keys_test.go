package app_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
)

// TestServeLogsKeyKinds: with --auth jwt the server says at start what
// its key file held: its form and the types of its keys.
func TestServeLogsKeyKinds(t *testing.T) {
	k := authtest.NewKeys(t)
	for file, want := range map[string]string{k.RSAFile: "form=pem kinds=rsa", k.ECFile: "form=pem kinds=ecdsa-p256", k.SecretFile: "form=hmac kinds=hmac"} {
		var buf bytes.Buffer
		cfg := app.Defaults()
		cfg.Demo = false
		cfg.Auth, cfg.JWTKeyFile = app.AuthJWT, file
		cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		s, err := app.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.Hub.Close()
		if !strings.Contains(buf.String(), `msg="jwt keys loaded"`) || !strings.Contains(buf.String(), want) {
			t.Errorf("%s: want a line naming %s in %q", file, want, buf.String())
		}
	}
}
