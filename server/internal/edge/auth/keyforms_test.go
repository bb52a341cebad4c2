package auth_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/testkit/authtest"
)

// keyForm is one way of writing a public key into a key file.
type keyForm struct {
	name string
	kind auth.KeyKind
	body []byte
	der  []byte // the DER or SSH blob inside, which a forger might also try
}

// sshBlob is the OpenSSH wire form of pub (RFC 4253, 5656, 8709).
func sshBlob(t *testing.T, pub crypto.PublicKey) (string, []byte) {
	t.Helper()
	var b []byte
	str := func(s []byte) { b = binary.BigEndian.AppendUint32(b, uint32(len(s))); b = append(b, s...) }
	mpint := func(n *big.Int) {
		v := n.Bytes()
		if len(v) > 0 && v[0]&0x80 != 0 {
			v = append([]byte{0}, v...)
		}
		str(v)
	}
	var typ string
	switch p := pub.(type) {
	case ed25519.PublicKey:
		typ = "ssh-ed25519"
		str([]byte(typ))
		str(p)
	case *rsa.PublicKey:
		typ = "ssh-rsa"
		str([]byte(typ))
		mpint(big.NewInt(int64(p.E)))
		mpint(p.N)
	case *ecdsa.PublicKey:
		typ = "ecdsa-sha2-nistp256"
		str([]byte(typ))
		str([]byte("nistp256"))
		q, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		str(q)
	default:
		t.Fatalf("no SSH form for %T", pub)
	}
	return typ, b
}

// keyForms writes pub (whose private half is priv) in every form a key
// file may take.
func keyForms(t *testing.T, priv crypto.Signer) []keyForm {
	t.Helper()
	pub := priv.Public()
	spki, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(s string, n int) string {
		var out []string
		for len(s) > n {
			out, s = append(out, s[:n]), s[n:]
		}
		return strings.Join(append(out, s), "\n") + "\n"
	}
	std := base64.StdEncoding.EncodeToString
	typ, blob := sshBlob(t, pub)
	forms := []keyForm{
		{"PEM public key", auth.KindPEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), spki},
		{"PEM certificate", auth.KindPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), cert},
		{"base64 DER public key on one line", auth.KindDER, []byte(std(spki)), spki},
		{"base64 DER public key with a line ending", auth.KindDER, []byte(std(spki) + "\n"), spki},
		{"base64 DER public key in lines of 64", auth.KindDER, []byte(wrap(std(spki), 64)), spki},
		{"base64url DER public key unpadded", auth.KindDER, []byte(base64.RawURLEncoding.EncodeToString(spki)), spki},
		{"base64 DER certificate on one line", auth.KindDER, []byte(std(cert)), cert},
		{"bare DER public key", auth.KindDER, spki, spki},
		{"bare DER certificate", auth.KindDER, cert, cert},
		{"OpenSSH public key line", auth.KindSSH, []byte(typ + " " + std(blob) + " ops@eden\n"), blob},
		{"base64 OpenSSH key blob", auth.KindDER, []byte(std(blob)), blob},
	}
	if r, ok := pub.(*rsa.PublicKey); ok {
		pkcs1 := x509.MarshalPKCS1PublicKey(r)
		forms = append(forms,
			keyForm{"PEM RSA public key", auth.KindPEM, pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: pkcs1}), pkcs1},
			keyForm{"base64 DER RSA public key", auth.KindDER, []byte(std(pkcs1)), pkcs1},
		)
	}
	return forms
}

func signers(t *testing.T) map[string]struct {
	priv   crypto.Signer
	method jwt.SigningMethod
} {
	k := authtest.NewKeys(t)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]struct {
		priv   crypto.Signer
		method jwt.SigningMethod
	}{
		"rsa":        {k.RSA, jwt.SigningMethodRS256},
		"ecdsa-p256": {k.EC, jwt.SigningMethodES256},
		"ed25519":    {ed, jwt.SigningMethodEdDSA},
	}
}

// TestKeyFileForms reads a public key in every form by its content: the
// key verifies its own tokens, and an HS256 token "signed" with the file's
// bytes (as read, trimmed, or the DER or SSH blob inside) is refused.
func TestKeyFileForms(t *testing.T) {
	for kind, s := range signers(t) {
		for _, f := range keyForms(t, s.priv) {
			t.Run(kind+"/"+f.name, func(t *testing.T) {
				v, err := auth.NewVerifier(auth.Config{KeyFile: write(t, "key", f.body)})
				if err != nil {
					t.Fatal(err)
				}
				if v.Kind() != f.kind || strings.Join(v.KeyKinds(), ",") != kind {
					t.Fatalf("read as %s holding %v, want %s holding %s", v.Kind(), v.KeyKinds(), f.kind, kind)
				}
				if _, err := v.Verify(sign(t, s.method, s.priv, claims(nil), "")); err != nil {
					t.Errorf("a token signed by the key: %v", err)
				}
				for _, secret := range [][]byte{f.body, bytes.TrimSpace(f.body), f.der} {
					wantReason(t, v, sign(t, jwt.SigningMethodHS256, secret, claims(nil), ""), auth.ReasonInvalid)
				}
			})
		}
	}
}

// TestHMACSecretDeclared: a secret declared with the "hmac:" prefix or as
// a JWKS oct key verifies HS256 tokens; a secret that is a public key in
// any form is refused whatever declares it, and the error says what was
// found and how to declare a secret.
func TestHMACSecretDeclared(t *testing.T) {
	k := authtest.NewKeys(t)
	for name, body := range map[string][]byte{
		"prefix":           append([]byte(auth.HMACPrefix), append(k.Secret, '\n')...),
		"JWKS oct":         []byte(`{"keys":[{"kty":"oct","k":"` + b64(k.Secret) + `"}]}`),
		"undeclared (old)": k.Secret,
	} {
		v := verifier(t, write(t, "k", body), "", "")
		if v.Kind() == auth.KindHMAC || v.Kind() == auth.KindJWKS {
			if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, k.Secret, claims(nil), "")); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		} else {
			t.Errorf("%s: read as %s", name, v.Kind())
		}
	}
	if s, err := auth.ReadSecret(write(t, "k", append([]byte(auth.HMACPrefix), k.Secret...))); err != nil || !bytes.Equal(s, k.Secret) {
		t.Errorf("ReadSecret(hmac:) = %q, %v", s, err)
	}

	for kind, s := range signers(t) {
		for _, f := range keyForms(t, s.priv) {
			for how, body := range map[string][]byte{
				"prefix":              append([]byte(auth.HMACPrefix), f.body...),
				"JWKS oct":            mustJSON(t, map[string]any{"keys": []any{map[string]any{"kty": "oct", "k": b64(f.body)}}}),
				"JWKS oct of the DER": mustJSON(t, map[string]any{"keys": []any{map[string]any{"kty": "oct", "k": b64(f.der)}}}),
			} {
				_, err := auth.NewVerifier(auth.Config{KeyFile: write(t, "k", body)})
				if err == nil || !strings.Contains(err.Error(), "public key is never a secret") {
					t.Errorf("%s %s as a secret (%s): %v", kind, f.name, how, err)
				}
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeyFileLooksLikeAKey: text that looks like a key but does not parse
// is an error naming what was found and how to declare a secret, never a
// secret.
func TestKeyFileLooksLikeAKey(t *testing.T) {
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ecPriv)
	for name, c := range map[string]struct{ body, want string }{
		"ssh line, bad data":      {"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFZ= x@y\n", "OpenSSH public key"},
		"ssh line, unknown type":  {"ssh-dss AAAAB3NzaC1kc3MAAACBAP1/U4EddRIpUt9KnC7s5Of2EbdSPO9EAMMeP4C2USZpRV1AIlH7WT2NWPq/xfW6MPbLm1Vs14E7gB00b/JmYLdrmVClpJ+f6AR7ECLCT7up1/63xhv4O1fnxqimFQ8E+4P208UewwI1VBNaFpEy9nXzrith1yrv8iIDGZ3RSAHHAAAAFQCXYFCPFSMLzLKSuYKi64QL8Fgc9QAAAnEA9+GghdabPd7LvKtcNrhXuXmUr7v6OuqC+VdMCz0HgmdRWVeOutRZT+ZxBxCBgLRJFnEj6EwoFhO3zwkyjMim4TwWeotifI0o4KOuHiuzpnWRbqN/C/ohNWLx+2J6ASQ7zKTxvqhRkImog9/hWuWfBpKLZl6Ae1UlZAFMO/7PSSo= x@y", "ssh-dss"},
		"ssh line, type mismatch": {"ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIGHo5JQ3zwm8dKaTYLBSLdR1qB6QsJ7w9s2L0lWcJ6l+", "holds"},
		"base64 DER private key":  {base64.StdEncoding.EncodeToString(pkcs8), "private key"},
		"PEM private key":         {string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})), "PUBLIC KEY"},
		"JSON that is not a JWKS": {`{"kty":"RSA"}`, "JWKS"},
		"ecdsa line, no data":     {"ecdsa-sha2-nistp256", "OpenSSH"},
	} {
		_, err := auth.NewVerifier(auth.Config{KeyFile: write(t, "k", []byte(c.body))})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
		if err != nil && !strings.HasPrefix(name, "PEM") && !strings.HasPrefix(name, "JSON") && !strings.Contains(err.Error(), auth.HMACPrefix) {
			t.Errorf("%s: %v does not say how to declare a secret", name, err)
		}
	}
}
