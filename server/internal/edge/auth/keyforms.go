package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// parseDER reads b as DER of a public key or certificate: the file's bytes
// themselves, or their base64 (standard or URL alphabet, padded or not,
// on one line or several, as identity providers show a realm's key). found
// reports that b is such DER (or the base64 of an OpenSSH key blob), even
// when the key it holds cannot be used (err says why); a file that is
// found is never an HMAC secret.
func parseDER(b []byte) (k key, found bool, err error) {
	cands := [][]byte{b}
	if compact := stripSpace(b); len(compact) > 0 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, derr := enc.DecodeString(string(compact)); derr == nil && len(d) > 0 {
				cands = append(cands, d)
				break
			}
		}
	}
	for _, d := range cands {
		if k, found, err = parseDERBytes(d); found {
			return k, found, err
		}
		if isSSHWire(d) {
			k, err = parseSSHWire(d, "")
			if err != nil {
				err = fmt.Errorf("the key file holds an OpenSSH public key blob that cannot be read: %w", err)
			}
			return k, true, err
		}
	}
	return key{}, false, nil
}

// parseDERBytes reads d as DER of a SubjectPublicKeyInfo, a PKCS #1 RSA
// public key or an X.509 certificate; a private key, or DER shaped like a
// public key or certificate that does not parse, is found with an error.
func parseDERBytes(d []byte) (key, bool, error) {
	if len(d) == 0 || d[0] != 0x30 {
		return key{}, false, nil // not an ASN.1 SEQUENCE
	}
	if pub, err := x509.ParsePKIXPublicKey(d); err == nil {
		k, err := publicKey("", pub)
		if err != nil {
			err = fmt.Errorf("DER public key: %w", err)
		}
		return k, true, err
	}
	if pub, err := x509.ParsePKCS1PublicKey(d); err == nil {
		k, err := publicKey("", pub)
		if err != nil {
			err = fmt.Errorf("DER RSA public key: %w", err)
		}
		return k, true, err
	}
	if cert, err := x509.ParseCertificate(d); err == nil {
		k, err := publicKey("", cert.PublicKey)
		if err != nil {
			err = fmt.Errorf("DER certificate: %w", err)
		}
		return k, true, err
	}
	if isPrivateDER(d) {
		return key{}, true, errors.New("the key file holds DER of a private key; give the public key (the server only verifies)")
	}
	// The shapes of a SubjectPublicKeyInfo and of a certificate, whatever
	// their algorithm: a key the server cannot use is still not a secret.
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		Key       asn1.BitString
	}
	if rest, err := asn1.Unmarshal(d, &spki); err == nil && len(rest) == 0 {
		return key{}, true, fmt.Errorf("the key file holds DER of a public key of an unsupported algorithm (%v)", spki.Algorithm.Algorithm)
	}
	var cert struct {
		TBS       asn1.RawValue
		Algorithm pkix.AlgorithmIdentifier
		Signature asn1.BitString
	}
	if rest, err := asn1.Unmarshal(d, &cert); err == nil && len(rest) == 0 {
		return key{}, true, errors.New("the key file holds DER shaped like a certificate that cannot be read")
	}
	var pkcs1 struct{ N, E *big.Int }
	if rest, err := asn1.Unmarshal(d, &pkcs1); err == nil && len(rest) == 0 {
		return key{}, true, errors.New("the key file holds DER shaped like an RSA public key that cannot be read")
	}
	return key{}, false, nil
}

func isPrivateDER(d []byte) bool {
	if _, err := x509.ParsePKCS8PrivateKey(d); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PrivateKey(d); err == nil {
		return true
	}
	_, err := x509.ParseECPrivateKey(d)
	return err == nil
}

func stripSpace(b []byte) []byte {
	return bytes.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, b)
}

// sshPrefixes start the key types of OpenSSH public key lines.
var sshPrefixes = []string{"ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"}

// isSSHLine reports whether b starts like an OpenSSH public key line.
func isSSHLine(b []byte) bool {
	for _, p := range sshPrefixes {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// parseSSHLine reads one OpenSSH public key line, "TYPE BASE64 [COMMENT]"
// (blank lines and # comments around it ignored).
func parseSSHLine(b []byte) (key, error) {
	var line string
	for l := range strings.SplitSeq(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if line != "" {
			return key{}, errors.New("more than one key line (give one key)")
		}
		line = l
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return key{}, fmt.Errorf("%s: no key data after the type", firstWord(line))
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return key{}, fmt.Errorf("%s: key data is not base64", f[0])
	}
	return parseSSHWire(blob, f[0])
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 && len(f[0]) <= 64 {
		return f[0]
	}
	return "key"
}

// isSSHWire reports whether d starts with the length-prefixed name of an
// OpenSSH key type (the start of a key blob).
func isSSHWire(d []byte) bool {
	name, _, ok := sshString(d)
	return ok && isSSHLine(name)
}

// sshString reads one length-prefixed string of the SSH wire format
// (RFC 4251 section 5).
func sshString(d []byte) (s, rest []byte, ok bool) {
	if len(d) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(d)
	if uint64(n) > uint64(len(d)-4) {
		return nil, nil, false
	}
	return d[4 : 4+n], d[4+n:], true
}

// sshMPInt reads an mpint: a non-negative big-endian integer here.
func sshMPInt(d []byte) (*big.Int, []byte, bool) {
	s, rest, ok := sshString(d)
	if !ok || len(s) > 0 && s[0]&0x80 != 0 {
		return nil, nil, false
	}
	return new(big.Int).SetBytes(s), rest, true
}

// parseSSHWire reads an OpenSSH public key blob (RFC 4253 section 6.6,
// RFC 5656 section 3.1, RFC 8709 section 4); lineType, when not empty, is
// the type the line named, which the blob must repeat.
func parseSSHWire(d []byte, lineType string) (key, error) {
	name, rest, ok := sshString(d)
	if !ok {
		return key{}, errors.New("truncated key data")
	}
	typ := string(name)
	if lineType != "" && typ != lineType {
		return key{}, fmt.Errorf("the line says %q but its key data holds %q", lineType, typ)
	}
	bad := fmt.Errorf("%s: malformed key data", typ)
	var pub any
	switch typ {
	case "ssh-ed25519":
		k, r, ok := sshString(rest)
		if !ok || len(k) != ed25519.PublicKeySize || len(r) != 0 {
			return key{}, bad
		}
		pub = ed25519.PublicKey(bytes.Clone(k))
	case "ssh-rsa":
		e, r, ok := sshMPInt(rest)
		if !ok {
			return key{}, bad
		}
		n, r, ok := sshMPInt(r)
		if !ok || len(r) != 0 {
			return key{}, bad
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || n.Sign() <= 0 {
			return key{}, bad
		}
		pub = &rsa.PublicKey{N: n, E: int(e.Int64())}
	case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
		curveName, r, ok := sshString(rest)
		if !ok || "ecdsa-sha2-"+string(curveName) != typ {
			return key{}, bad
		}
		q, r, ok := sshString(r)
		if !ok || len(r) != 0 {
			return key{}, bad
		}
		curve := map[string]elliptic.Curve{"nistp256": elliptic.P256(), "nistp384": elliptic.P384(), "nistp521": elliptic.P521()}[string(curveName)]
		p, err := ecdsa.ParseUncompressedPublicKey(curve, q)
		if err != nil {
			return key{}, bad
		}
		pub = p
	default:
		return key{}, fmt.Errorf("unsupported OpenSSH key type %q (want ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp256/384/521)", typ)
	}
	k, err := publicKey("", pub)
	if err != nil {
		return key{}, fmt.Errorf("%s: %w", typ, err)
	}
	return k, nil
}
