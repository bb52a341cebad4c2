package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"
)

// FuzzParseKeyFile: reading any key file never panics, and never yields
// an HMAC secret from a file (or a secret) that parses as a public key or
// certificate, bare or in base64, or that starts like a key of another
// form.
func FuzzParseKeyFile(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, pub := range []any{&ec.PublicKey, edPub} {
		der, _ := x509.MarshalPKIXPublicKey(pub)
		f.Add(der)
		f.Add([]byte(base64.StdEncoding.EncodeToString(der)))
		f.Add([]byte(base64.RawURLEncoding.EncodeToString(der) + "\n"))
		f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		f.Add(append([]byte(HMACPrefix), base64.StdEncoding.EncodeToString(der)...))
	}
	f.Add([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGHo5JQ3zwm8dKaTYLBSLdR1qB6QsJ7w9s2L0lWcJ6l+ x@y\n"))
	f.Add([]byte("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB"))
	f.Add([]byte("0123456789abcdef0123456789abcdef-test-secret\n"))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, keys, err := parseKeys(b)
		if err != nil {
			return
		}
		if len(keys) == 0 {
			t.Fatalf("kind %s, no keys, no error", kind)
		}
		for _, k := range keys {
			secret, ok := k.key.([]byte)
			if !ok {
				continue
			}
			if kind != KindHMAC && kind != KindJWKS {
				t.Fatalf("an HMAC key from a %s file", kind)
			}
			for _, in := range [][]byte{b, secret} {
				if what := parsesAsPublicKey(in); what != "" {
					t.Fatalf("HMAC secret %q from %q, which is %s", secret, b, what)
				}
			}
		}
	})
}

// parsesAsPublicKey names how b parses as a public key, independently of
// the parser under test, or returns "".
func parsesAsPublicKey(b []byte) string {
	t := bytes.TrimSpace(b)
	if bytes.HasPrefix(t, []byte(HMACPrefix)) {
		t = bytes.TrimSpace(t[len(HMACPrefix):])
	}
	for _, p := range []string{"ssh-", "ecdsa-", "-----BEGIN"} {
		if bytes.HasPrefix(t, []byte(p)) {
			return "a " + p + " line"
		}
	}
	if blk, _ := pem.Decode(t); blk != nil {
		return "PEM"
	}
	cands := [][]byte{t}
	compact := bytes.Join(bytes.Fields(t), nil)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(string(compact)); err == nil {
			cands = append(cands, d)
		}
	}
	for _, d := range cands {
		if _, err := x509.ParsePKIXPublicKey(d); err == nil {
			return "DER of a public key"
		}
		if _, err := x509.ParsePKCS1PublicKey(d); err == nil {
			return "DER of an RSA public key"
		}
		if _, err := x509.ParseCertificate(d); err == nil {
			return "DER of a certificate"
		}
	}
	return ""
}
