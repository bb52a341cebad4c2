// Package auth is ringcast's edge trust: one JWT verifier for every face
// (Connect, gRPC, gRPC-Web, SSE), the per-topic grants a token carries, and
// the identity a request runs as (docs/security.md).
//
// A token is an RS*/PS*/ES*/EdDSA or HS* JWT with a required exp, nbf and
// iat honoured, iss and aud checked when configured, and a "ringcast" claim
// granting topics:
//
//	{"sub": "gauge-bridge", "exp": 1767225600,
//	 "ringcast": {"publish": ["gauges/eden"], "subscribe": ["*"]}}
//
// Each grant entry matches as a subscribe topic filter does (the topic
// itself, or a prefix ending at a "/" boundary); "*" is every topic; a
// missing list grants nothing.
package auth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ringcast/ringcast/server/internal/face/names"
)

// Reason is why a request was refused; it is the reason label of
// ringcast_auth_rejections_total.
type Reason string

// The rejection reasons.
const (
	ReasonMissing   Reason = "missing"   // no token
	ReasonInvalid   Reason = "invalid"   // malformed, bad signature, wrong iss/aud, not yet valid, alg refused
	ReasonExpired   Reason = "expired"   // exp passed
	ReasonForbidden Reason = "forbidden" // valid token, topic outside its grant
)

// Reasons lists every Reason (for metrics pre-registration).
var Reasons = []Reason{ReasonMissing, ReasonInvalid, ReasonExpired, ReasonForbidden}

// Error is a refused token or request. Its message is safe to send to the
// client: it names no internals.
type Error struct {
	Reason Reason
	msg    string
	cause  error // for logs; not sent
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the underlying verification error.
func (e *Error) Unwrap() error { return e.cause }

// Messages sent to clients for each outcome; an expired token's is
// names.TokenExpired, which the clients recognise by its wording.
const (
	MsgMissing = "token required"
	MsgInvalid = "token invalid"
)

// Config configures a Verifier.
type Config struct {
	// KeyFile holds an HMAC secret, a PEM public key or a JWKS.
	KeyFile string
	// Issuer, when set, must equal the token's iss.
	Issuer string
	// Audience, when set, must be one of the token's aud.
	Audience string
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time
}

// Leeway is the clock skew allowed on every time claim: a token is
// refused from exp + Leeway on (Identity.Deadline), and taken from nbf -
// Leeway.
const Leeway = 5 * time.Second

// Verifier checks tokens against one key file. It is safe for concurrent
// use.
type Verifier struct {
	kind   KeyKind
	keys   []key
	parser *jwt.Parser
}

// NewVerifier reads cfg.KeyFile and returns a verifier for it.
func NewVerifier(cfg Config) (*Verifier, error) {
	kind, keys, err := ReadKeyFile(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("jwt key file: %w", err)
	}
	return newVerifier(kind, keys, cfg), nil
}

func newVerifier(kind KeyKind, keys []key, cfg Config) *Verifier {
	var methods []string
	for _, k := range keys {
		for _, m := range k.methods {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	if cfg.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(cfg.Now))
	}
	return &Verifier{kind: kind, keys: keys, parser: jwt.NewParser(opts...)}
}

// Kind is the form of the key file the verifier uses.
func (v *Verifier) Kind() KeyKind { return v.kind }

// KeyKinds lists the types of the verifier's keys, each once, in file
// order: hmac, rsa, ecdsa-p256 (-p384, -p521), ed25519.
func (v *Verifier) KeyKinds() []string {
	var kinds []string
	for _, k := range v.keys {
		if kk := k.kind(); !slices.Contains(kinds, kk) {
			kinds = append(kinds, kk)
		}
	}
	return kinds
}

// claims is a ringcast token's payload.
type claims struct {
	jwt.RegisteredClaims
	Ringcast *Scopes `json:"ringcast,omitempty"`
}

// Verify checks a token and returns the identity it grants, or an *Error
// (ReasonMissing for "", ReasonExpired for a passed exp, ReasonInvalid for
// everything else).
func (v *Verifier) Verify(token string) (*Identity, error) {
	if token == "" {
		return nil, &Error{Reason: ReasonMissing, msg: MsgMissing}
	}
	var c claims
	_, err := v.parser.ParseWithClaims(token, &c, v.keyFor)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) && !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			return nil, &Error{Reason: ReasonExpired, msg: names.TokenExpired, cause: err}
		}
		return nil, &Error{Reason: ReasonInvalid, msg: MsgInvalid, cause: err}
	}
	// The parser refused the token unless now < exp + Leeway: the same
	// instant is the identity's Deadline, which ends its streams.
	id := &Identity{Issuer: c.Issuer, Subject: c.Subject, Deadline: c.ExpiresAt.Time.Add(Leeway)}
	if c.Ringcast != nil {
		id.Publish, id.Subscribe = Grant(c.Ringcast.Publish), Grant(c.Ringcast.Subscribe)
	}
	return id, nil
}

// keyFor is the jwt.Keyfunc: the key named by kid (or the only key), and
// only when the token's algorithm belongs to that key's family.
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	kid, _ := t.Header["kid"].(string)
	var found *key
	switch {
	case v.kind != KindJWKS || len(v.keys) == 1 && kid == "":
		found = &v.keys[0]
	default:
		for i := range v.keys {
			if v.keys[i].kid == kid && slices.Contains(v.keys[i].methods, alg) {
				found = &v.keys[i]
				break
			}
		}
	}
	if found == nil {
		return nil, errors.New("no key for this kid and alg")
	}
	if !slices.Contains(found.methods, alg) {
		return nil, fmt.Errorf("alg %s does not fit the key", alg)
	}
	return found.key, nil
}

// Identity is who a verified token speaks for and what it may do.
type Identity struct {
	// Issuer and Subject are the token's iss and sub ("" when it has
	// none); together they name the publisher (Publisher).
	Issuer    string
	Subject   string
	Publish   Grant
	Subscribe Grant
	// Deadline is the instant from which the server refuses the token
	// (exp + Leeway): the token is valid at t exactly when t is before
	// Deadline (Valid). A stream opened with it is accepted only while it
	// is valid and ends at Deadline, so a token is valid or not, once,
	// for the same instant on every face.
	Deadline time.Time
}

// Valid reports whether the token is still valid at now.
func (id *Identity) Valid(now time.Time) bool { return now.Before(id.Deadline) }

// Expired is the refusal of a token whose Deadline has passed.
func Expired() *Error { return &Error{Reason: ReasonExpired, msg: names.TokenExpired} }
