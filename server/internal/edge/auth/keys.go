package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
)

// MinSecretBytes is the shortest HMAC secret accepted (256 bits).
const MinSecretBytes = 32

// KeyKind names the form a key file is written in.
type KeyKind string

// The forms of key file a server can verify tokens with. A file is read by
// its content, never by its name, and a public key in any of these forms
// is only ever a public key: it never becomes an HMAC secret.
const (
	KindHMAC KeyKind = "hmac" // a shared secret, declared as one: HS256, HS384, HS512
	KindPEM  KeyKind = "pem"  // one PEM public key or certificate: RS*/PS*, ES*, EdDSA
	KindDER  KeyKind = "der"  // one DER public key or certificate, bare or in base64
	KindSSH  KeyKind = "ssh"  // one OpenSSH public key line (ssh-ed25519, ssh-rsa, ecdsa-sha2-*)
	KindJWKS KeyKind = "jwks" // a JWK Set: keys chosen by the token's kid
)

// HMACPrefix declares a key file's content an HMAC secret: the bytes after
// it (trailing spaces and line ending ignored) are the secret.
const HMACPrefix = "hmac:"

// howToDeclare is the end of every error about a file that is not a
// usable key: how to say that a file holds a secret.
const howToDeclare = `; to verify with a shared HMAC secret, write the file as "` + HMACPrefix + `<secret>" or as a JWKS {"keys":[{"kty":"oct","k":"<base64url secret>"}]}`

// key is one verification key and the algorithms it may verify: the
// algorithms of its family only, so an HMAC token is never checked against
// a public key (algorithm confusion) and "none" never verifies.
type key struct {
	kid     string
	key     any // []byte, *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	methods []string
}

// kind names the key's type for logs: hmac, rsa, ecdsa-p256 (-p384,
// -p521) or ed25519.
func (k key) kind() string {
	switch p := k.key.(type) {
	case []byte:
		return "hmac"
	case *rsa.PublicKey:
		return "rsa"
	case *ecdsa.PublicKey:
		return "ecdsa-p" + strconv.Itoa(p.Curve.Params().BitSize)
	case ed25519.PublicKey:
		return "ed25519"
	}
	return "unknown"
}

var (
	hmacMethods = []string{"HS256", "HS384", "HS512"}
	rsaMethods  = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	edMethods   = []string{"EdDSA"}
)

// ReadKeyFile reads a key file and parses it by its content
// (docs/security.md): a JSON document is a JWKS; a "-----BEGIN" block is a
// PEM public key or certificate; an OpenSSH public key line is that key;
// DER (bare, or base64 on one or more lines) of a SubjectPublicKeyInfo, a
// PKCS #1 RSA public key or an X.509 certificate is that key; a file
// starting "hmac:" is the HMAC secret after it. Anything else is taken as
// an HMAC secret (raw bytes, trailing spaces and line ending ignored, at
// least MinSecretBytes long) only when it cannot be a key: text that looks
// like any of the forms above but does not parse is an error.
func ReadKeyFile(path string) (KeyKind, []key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	return parseKeys(b)
}

// ReadSecret reads a key file that must hold an HMAC secret (for minting).
func ReadSecret(path string) ([]byte, error) {
	kind, keys, err := ReadKeyFile(path)
	if err != nil {
		return nil, err
	}
	if kind != KindHMAC {
		return nil, fmt.Errorf("%s holds a %s key (%s), not an HMAC secret: only HMAC secrets can mint tokens here", path, kind, keys[0].kind())
	}
	return keys[0].key.([]byte), nil
}

func parseKeys(b []byte) (KeyKind, []key, error) {
	trimmed := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(trimmed, []byte(HMACPrefix)):
		raw := bytes.TrimPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte(HMACPrefix))
		k, err := hmacKey("", bytes.TrimRight(raw, " \t\r\n"), raw)
		if err != nil {
			return KindHMAC, nil, fmt.Errorf("%q key file: %w", HMACPrefix, err)
		}
		return KindHMAC, []key{k}, nil
	case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['):
		keys, err := parseJWKS(trimmed)
		return KindJWKS, keys, err
	case bytes.Contains(trimmed, []byte("-----BEGIN")):
		k, err := parsePEM(trimmed)
		if err != nil {
			return KindPEM, nil, err
		}
		return KindPEM, []key{k}, nil
	case isSSHLine(trimmed):
		k, err := parseSSHLine(trimmed)
		if err != nil {
			return KindSSH, nil, fmt.Errorf("the key file looks like an OpenSSH public key but cannot be read: %w%s", err, howToDeclare)
		}
		return KindSSH, []key{k}, nil
	}
	if k, found, err := parseDER(b); found {
		if err != nil {
			return KindDER, nil, fmt.Errorf("%w%s", err, howToDeclare)
		}
		return KindDER, []key{k}, nil
	}
	k, err := hmacKey("", bytes.TrimRight(b, " \t\r\n"), b)
	if err != nil {
		return KindHMAC, nil, fmt.Errorf("%w (a secret without the %q prefix)", err, HMACPrefix)
	}
	return KindHMAC, []key{k}, nil
}

// hmacKey makes an HMAC key of secret, which must be long enough and must
// not be a public key in any form this package reads: a public key is
// known to everyone, so a secret that is one would let anyone sign. raw,
// when given, is the secret as written before its trailing spaces were
// trimmed, checked too (trimming may cut the end off binary DER).
func hmacKey(kid string, secret, raw []byte) (key, error) {
	if len(secret) < MinSecretBytes {
		return key{}, fmt.Errorf("HMAC secret is %d bytes; at least %d are required", len(secret), MinSecretBytes)
	}
	what := publicKeyForm(secret)
	if what == "" && raw != nil {
		what = publicKeyForm(raw)
	}
	if what != "" {
		return key{}, fmt.Errorf("the HMAC secret is %s: a public key is never a secret (anyone who has it could sign tokens); give the public key itself as the key file", what)
	}
	return key{kid: kid, key: secret, methods: hmacMethods}, nil
}

// publicKeyForm names the key form b is written in ("a PEM block", "an
// OpenSSH public key", "a JSON document", "DER of a public key or
// certificate"), or "" when b is none of them.
func publicKeyForm(b []byte) string {
	trimmed := bytes.TrimSpace(b)
	switch {
	case bytes.Contains(trimmed, []byte("-----BEGIN")):
		return "a PEM block"
	case isSSHLine(trimmed):
		return "an OpenSSH public key"
	case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['):
		return "a JSON document"
	}
	if _, found, _ := parseDER(b); found {
		return "DER of a public key or certificate"
	}
	return ""
}

func parsePEM(b []byte) (key, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return key{}, errors.New("PEM key file: no PEM block")
	}
	var pub any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return key{}, fmt.Errorf("PEM key file holds %q; want a PUBLIC KEY (the server needs no private key)", block.Type)
	}
	if err != nil {
		return key{}, fmt.Errorf("PEM key file: %w", err)
	}
	return publicKey("", pub)
}

// publicKey pairs a public key with its family's algorithms.
func publicKey(kid string, pub any) (key, error) {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if p.N.BitLen() < 2048 {
			return key{}, fmt.Errorf("RSA key is %d bits; at least 2048 are required", p.N.BitLen())
		}
		return key{kid: kid, key: p, methods: rsaMethods}, nil
	case *ecdsa.PublicKey:
		var m string
		switch p.Curve {
		case elliptic.P256():
			m = "ES256"
		case elliptic.P384():
			m = "ES384"
		case elliptic.P521():
			m = "ES512"
		default:
			return key{}, errors.New("unsupported elliptic curve (want P-256, P-384 or P-521)")
		}
		return key{kid: kid, key: p, methods: []string{m}}, nil
	case ed25519.PublicKey:
		return key{kid: kid, key: p, methods: edMethods}, nil
	}
	return key{}, fmt.Errorf("unsupported public key type %T", pub)
}

// jwk is the subset of RFC 7517/7518/8037 fields a verifier needs.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	K   string `json:"k"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func parseJWKS(b []byte) ([]key, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("JWKS key file: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New(`JWKS key file: no "keys"`)
	}
	var keys []key
	for i, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		k, err := j.key()
		if err != nil {
			return nil, fmt.Errorf("JWKS key file: key %d (kid %q): %w", i, j.Kid, err)
		}
		if j.Alg != "" {
			if !slices.Contains(k.methods, j.Alg) {
				return nil, fmt.Errorf("JWKS key file: key %d (kid %q): alg %q does not fit its key type %s", i, j.Kid, j.Alg, j.Kty)
			}
			k.methods = []string{j.Alg}
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS key file: no signing keys")
	}
	return keys, nil
}

func (j jwk) key() (key, error) {
	b64 := func(s, name string) ([]byte, error) {
		v, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(v) == 0 {
			return nil, fmt.Errorf("bad or missing %q", name)
		}
		return v, nil
	}
	switch j.Kty {
	case "oct":
		k, err := b64(j.K, "k")
		if err != nil {
			return key{}, err
		}
		return hmacKey(j.Kid, k, nil)
	case "RSA":
		n, err := b64(j.N, "n")
		if err != nil {
			return key{}, err
		}
		e, err := b64(j.E, "e")
		if err != nil {
			return key{}, err
		}
		ev := new(big.Int).SetBytes(e)
		if !ev.IsInt64() || ev.Int64() < 3 || ev.Int64() > 1<<31-1 {
			return key{}, errors.New(`bad "e"`)
		}
		return publicKey(j.Kid, &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(ev.Int64())})
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return key{}, fmt.Errorf("unsupported crv %q", j.Crv)
		}
		x, err := b64(j.X, "x")
		if err != nil {
			return key{}, err
		}
		y, err := b64(j.Y, "y")
		if err != nil {
			return key{}, err
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return key{}, errors.New("x and y do not fit the curve")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return key{}, err
		}
		return publicKey(j.Kid, pub)
	case "OKP":
		if j.Crv != "Ed25519" {
			return key{}, fmt.Errorf("unsupported crv %q", j.Crv)
		}
		x, err := b64(j.X, "x")
		if err != nil {
			return key{}, err
		}
		if len(x) != ed25519.PublicKeySize {
			return key{}, errors.New("bad Ed25519 key length")
		}
		return publicKey(j.Kid, ed25519.PublicKey(x))
	}
	return key{}, fmt.Errorf("unsupported kty %q", j.Kty)
}
