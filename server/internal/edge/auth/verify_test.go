package auth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
)

func write(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func verifier(t *testing.T, keyFile string, iss, aud string) *auth.Verifier {
	t.Helper()
	v, err := auth.NewVerifier(auth.Config{KeyFile: keyFile, Issuer: iss, Audience: aud})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"sub":      "alice",
		"iss":      "ringcast-test",
		"aud":      "ringcast",
		"iat":      now.Unix(),
		"exp":      now.Add(time.Hour).Unix(),
		"ringcast": map[string]any{"publish": []string{"gauges/eden"}, "subscribe": []string{"*"}},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantReason(t *testing.T, v *auth.Verifier, token string, want auth.Reason) {
	t.Helper()
	id, err := v.Verify(token)
	var ae *auth.Error
	if !errors.As(err, &ae) {
		t.Fatalf("Verify = %+v, %v; want a %s refusal", id, err, want)
	}
	if ae.Reason != want {
		t.Fatalf("reason = %s (%v), want %s", ae.Reason, ae.Unwrap(), want)
	}
	if strings.Contains(ae.Error(), "jwt") || strings.Contains(ae.Error(), "*") {
		t.Errorf("client message %q names internals", ae.Error())
	}
}

// TestVerifyRejections proves each rejection reason against an HMAC key
// with issuer and audience configured.
func TestVerifyRejections(t *testing.T) {
	k := authtest.NewKeys(t)
	v := verifier(t, k.SecretFile, "ringcast-test", "ringcast")
	other := []byte(strings.Repeat("z", 32))
	hs := func(mod func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodHS256, k.Secret, claims(mod), "")
	}

	good, err := v.Verify(hs(nil))
	if err != nil {
		t.Fatal(err)
	}
	if good.Subject != "alice" || !good.Publish.Allows("gauges/eden/g-1") || good.Publish.Allows("gauges/lune") || !good.Subscribe.All() {
		t.Fatalf("identity %+v", good)
	}
	if time.Until(good.Deadline) < 59*time.Minute {
		t.Errorf("expiry %v", good.Deadline)
	}

	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		token string
		want  auth.Reason
	}{
		{"missing", "", auth.ReasonMissing},
		{"garbage", "not.a.token", auth.ReasonInvalid},
		{"bad signature", sign(t, jwt.SigningMethodHS256, other, claims(nil), ""), auth.ReasonInvalid},
		{"tampered payload", tamper(hs(nil)), auth.ReasonInvalid},
		{"wrong issuer", hs(func(c jwt.MapClaims) { c["iss"] = "mallory" }), auth.ReasonInvalid},
		{"no issuer", hs(func(c jwt.MapClaims) { delete(c, "iss") }), auth.ReasonInvalid},
		{"wrong audience", hs(func(c jwt.MapClaims) { c["aud"] = "other" }), auth.ReasonInvalid},
		{"expired", hs(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), auth.ReasonExpired},
		{"no exp", hs(func(c jwt.MapClaims) { delete(c, "exp") }), auth.ReasonInvalid},
		{"nbf in the future", hs(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() }), auth.ReasonInvalid},
		{"iat in the future", hs(func(c jwt.MapClaims) { c["iat"] = time.Now().Add(time.Hour).Unix() }), auth.ReasonInvalid},
		{"alg none", none, auth.ReasonInvalid},
		{"grant not a list", hs(func(c jwt.MapClaims) { c["ringcast"] = map[string]any{"publish": "gauges"} }), auth.ReasonInvalid},
		{"expired with a bad signature", sign(t, jwt.SigningMethodHS256, other, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), ""), auth.ReasonInvalid},
	} {
		t.Run(c.name, func(t *testing.T) { wantReason(t, v, c.token, c.want) })
	}
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p, _ := base64.RawURLEncoding.DecodeString(parts[1])
	p = []byte(strings.Replace(string(p), `"gauges/eden"`, `"*"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

// TestPublicKeysAndConfusion verifies RS/PS/ES/EdDSA tokens against PEM
// keys and refuses an HS256 token "signed" with the public key's bytes.
func TestPublicKeysAndConfusion(t *testing.T) {
	k := authtest.NewKeys(t)
	rv := verifier(t, k.RSAFile, "", "")
	for _, m := range []jwt.SigningMethod{jwt.SigningMethodRS256, jwt.SigningMethodPS384} {
		if _, err := rv.Verify(sign(t, m, k.RSA, claims(nil), "")); err != nil {
			t.Errorf("%s: %v", m.Alg(), err)
		}
	}
	pemBytes, _ := os.ReadFile(k.RSAFile)
	wantReason(t, rv, sign(t, jwt.SigningMethodHS256, pemBytes, claims(nil), ""), auth.ReasonInvalid)
	wantReason(t, rv, authtest.Confused(t, k.RSAFile, claims(nil)), auth.ReasonInvalid)
	wantReason(t, rv, sign(t, jwt.SigningMethodES256, k.EC, claims(nil), ""), auth.ReasonInvalid)

	ev := verifier(t, k.ECFile, "", "")
	if _, err := ev.Verify(sign(t, jwt.SigningMethodES256, k.EC, claims(nil), "")); err != nil {
		t.Error(err)
	}
	ecPEM, _ := os.ReadFile(k.ECFile)
	wantReason(t, ev, sign(t, jwt.SigningMethodHS256, ecPEM, claims(nil), ""), auth.ReasonInvalid)

	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(edPriv.Public())
	edv := verifier(t, write(t, "ed.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), "", "")
	if _, err := edv.Verify(sign(t, jwt.SigningMethodEdDSA, edPriv, claims(nil), "")); err != nil {
		t.Error(err)
	}
}

// TestJWKSByKid picks the key by kid and refuses unknown kids and algs
// that do not fit the named key.
func TestJWKSByKid(t *testing.T) {
	k := authtest.NewKeys(t)
	set := map[string]any{"keys": []any{
		map[string]any{"kty": "RSA", "kid": "r1", "use": "sig", "n": b64(k.RSA.N.Bytes()), "e": b64([]byte{1, 0, 1})},
		map[string]any{"kty": "EC", "kid": "e1", "crv": "P-256", "x": b64(pad(k.EC.X.Bytes(), 32)), "y": b64(pad(k.EC.Y.Bytes(), 32))},
		map[string]any{"kty": "oct", "kid": "h1", "k": b64(k.Secret)},
	}}
	b, _ := json.Marshal(set)
	v := verifier(t, write(t, "jwks.json", b), "", "")
	if v.Kind() != auth.KindJWKS {
		t.Fatalf("kind %s", v.Kind())
	}
	for _, c := range []struct {
		m   jwt.SigningMethod
		key any
		kid string
	}{{jwt.SigningMethodRS256, k.RSA, "r1"}, {jwt.SigningMethodES256, k.EC, "e1"}, {jwt.SigningMethodHS512, k.Secret, "h1"}} {
		if _, err := v.Verify(sign(t, c.m, c.key, claims(nil), c.kid)); err != nil {
			t.Errorf("kid %s: %v", c.kid, err)
		}
	}
	wantReason(t, v, sign(t, jwt.SigningMethodRS256, k.RSA, claims(nil), "nope"), auth.ReasonInvalid)
	wantReason(t, v, sign(t, jwt.SigningMethodRS256, k.RSA, claims(nil), ""), auth.ReasonInvalid)
	wantReason(t, v, sign(t, jwt.SigningMethodES256, k.EC, claims(nil), "r1"), auth.ReasonInvalid)
	wantReason(t, v, sign(t, jwt.SigningMethodHS256, k.Secret, claims(nil), "r1"), auth.ReasonInvalid)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func pad(b []byte, n int) []byte { return append(make([]byte, n-len(b)), b...) }

func TestKeyFileErrors(t *testing.T) {
	k := authtest.NewKeys(t)
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(ecPriv)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallDER, _ := x509.MarshalPKIXPublicKey(&small.PublicKey)
	for name, body := range map[string][]byte{
		"short secret": []byte("hunter2\n"),
		"private key":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		"small RSA":    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: smallDER}),
		"empty JWKS":   []byte(`{"keys":[]}`),
		"bad JWKS":     []byte(`{"keys":[{"kty":"RSA","n":"!!"}]}`),
		"JWKS alg":     []byte(`{"keys":[{"kty":"oct","k":"` + b64(k.Secret) + `","alg":"RS256"}]}`),
	} {
		if _, err := auth.NewVerifier(auth.Config{KeyFile: write(t, "k", body)}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := auth.ReadSecret(k.RSAFile); err == nil || !strings.Contains(err.Error(), "not an HMAC secret") {
		t.Errorf("ReadSecret(PEM) = %v", err)
	}
	if s, err := auth.ReadSecret(write(t, "s", append(append([]byte(nil), k.Secret...), '\n'))); err != nil || string(s) != string(k.Secret) {
		t.Errorf("ReadSecret = %q, %v (the trailing newline is not part of the secret)", s, err)
	}
}

func TestGrant(t *testing.T) {
	g := auth.Grant{"gauges/eden", "alerts"}
	for topic, want := range map[string]bool{
		"gauges/eden": true, "gauges/eden/g-1": true, "gauges/edenx": false, "gauges": false,
		"alerts": true, "alerts/a/b": true, "other": false, "": false,
	} {
		if g.Allows(topic) != want {
			t.Errorf("Allows(%q) = %v", topic, !want)
		}
	}
	if g.All() || !(auth.Grant{"*"}).All() || !(auth.Grant{"*"}).Allows("x/y") || (auth.Grant(nil)).Allows("x") {
		t.Error("All / * / empty grant")
	}
}

func TestMintRoundTrip(t *testing.T) {
	k := authtest.NewKeys(t)
	tok, err := auth.Mint(k.Secret, auth.Token{Subject: "bob", Publish: []string{"a"}, Subscribe: []string{"a", "b"}, TTL: time.Hour, Issuer: "i", Audience: "x"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := verifier(t, k.SecretFile, "i", "x").Verify(tok)
	if err != nil || id.Subject != "bob" || !id.Publish.Allows("a/1") || id.Publish.Allows("b") || !id.Subscribe.Allows("b") {
		t.Fatalf("%+v %v", id, err)
	}
	tok, _ = auth.Mint(k.Secret, auth.Token{Subject: "carol", TTL: time.Hour})
	id, err = verifier(t, k.SecretFile, "", "").Verify(tok)
	if err != nil || len(id.Publish) != 0 || len(id.Subscribe) != 0 {
		t.Fatalf("no grants: %+v %v", id, err)
	}
}

// TestDeadlineIsTheRefusalInstant: a token is accepted exactly until exp
// + Leeway, and the identity's Deadline, which ends its streams, is that
// same instant.
func TestDeadlineIsTheRefusalInstant(t *testing.T) {
	k := authtest.NewKeys(t)
	exp := time.Now().Truncate(time.Second).Add(time.Hour)
	tok := sign(t, jwt.SigningMethodHS256, k.Secret, claims(func(c jwt.MapClaims) { c["exp"] = exp.Unix() }), "")
	at := func(now time.Time) *auth.Verifier {
		v, err := auth.NewVerifier(auth.Config{KeyFile: k.SecretFile, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	deadline := exp.Add(auth.Leeway)
	id, err := at(deadline.Add(-time.Nanosecond)).Verify(tok)
	if err != nil {
		t.Fatalf("a nanosecond before exp + leeway: %v", err)
	}
	if !id.Deadline.Equal(deadline) || !id.Valid(deadline.Add(-time.Nanosecond)) || id.Valid(deadline) {
		t.Fatalf("Deadline %v, want %v (exp + leeway), valid before it and not at it", id.Deadline, deadline)
	}
	wantReason(t, at(deadline), tok, auth.ReasonExpired)
}
