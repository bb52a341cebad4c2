// Package authtest makes keys and tokens for tests of ringcast's auth
// (docs/security.md): an HMAC secret and RSA and EC key pairs written to
// key files, and tokens good and bad.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Keys are a test's key material and the key files that hold the
// verifying halves.
type Keys struct {
	Secret     []byte
	SecretFile string
	RSA        *rsa.PrivateKey
	RSAFile    string // PEM public key
	EC         *ecdsa.PrivateKey
	ECFile     string // PEM public key
}

var (
	once  sync.Once
	rsaK  *rsa.PrivateKey
	ecK   *ecdsa.PrivateKey
	kgErr error
)

// NewKeys writes the key files into a test temporary directory. The key
// pairs are generated once per test binary.
func NewKeys(t testing.TB) *Keys {
	t.Helper()
	once.Do(func() {
		if rsaK, kgErr = rsa.GenerateKey(rand.Reader, 2048); kgErr == nil {
			ecK, kgErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		}
	})
	if kgErr != nil {
		t.Fatal(kgErr)
	}
	dir := t.TempDir()
	k := &Keys{Secret: []byte("0123456789abcdef0123456789abcdef-test-secret"), RSA: rsaK, EC: ecK}
	k.SecretFile = writeFile(t, dir, "secret", append(append([]byte(nil), k.Secret...), '\n'))
	k.RSAFile = writeFile(t, dir, "rsa.pem", publicPEM(t, &rsaK.PublicKey))
	k.ECFile = writeFile(t, dir, "ec.pem", publicPEM(t, &ecK.PublicKey))
	return k
}

func publicPEM(t testing.TB, pub any) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Claims returns the claims of a valid token for sub granting publish and
// subscribe (nil: the list is left out), expiring after ttl.
func Claims(sub string, publish, subscribe []string, ttl time.Duration) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"sub": sub, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	scope := map[string]any{}
	if publish != nil {
		scope["publish"] = publish
	}
	if subscribe != nil {
		scope["subscribe"] = subscribe
	}
	c["ringcast"] = scope
	return c
}

// Sign signs claims with method and key.
func Sign(t testing.TB, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// HS256 signs claims with the test secret.
func (k *Keys) HS256(t testing.TB, c jwt.MapClaims) string {
	return Sign(t, jwt.SigningMethodHS256, k.Secret, c)
}

// RS256 signs claims with the test RSA key.
func (k *Keys) RS256(t testing.TB, c jwt.MapClaims) string {
	return Sign(t, jwt.SigningMethodRS256, k.RSA, c)
}

// None is an unsigned token (alg "none").
func None(t testing.TB, c jwt.MapClaims) string {
	return Sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, c)
}

// Confused is the algorithm-confusion attack on a public-key verifier: an
// HS256 token whose HMAC secret is the public key file's bytes.
func Confused(t testing.TB, publicKeyFile string, c jwt.MapClaims) string {
	t.Helper()
	b, err := os.ReadFile(publicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return Sign(t, jwt.SigningMethodHS256, b, c)
}
