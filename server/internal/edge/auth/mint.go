package auth

import (
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token is what Mint puts in a token.
type Token struct {
	Subject   string
	Publish   []string // nil: the claim is left out (grants nothing)
	Subscribe []string
	TTL       time.Duration
	Issuer    string // optional
	Audience  string // optional
	Now       time.Time
}

// Mint signs an HS256 token for development and tests (`ringcast token`).
// Production tokens usually come from an identity provider; any JWT
// library makes the same token (docs/security.md).
func Mint(secret []byte, t Token) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", errors.New("HMAC secret too short")
	}
	if t.TTL <= 0 {
		return "", errors.New("ttl must be positive")
	}
	now := t.Now
	if now.IsZero() {
		now = time.Now()
	}
	c := claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   t.Subject,
		Issuer:    t.Issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(t.TTL)),
	}}
	if t.Audience != "" {
		c.Audience = jwt.ClaimStrings{t.Audience}
	}
	if t.Publish != nil || t.Subscribe != nil {
		c.Ringcast = &Scopes{Publish: t.Publish, Subscribe: t.Subscribe}
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
}

// Scopes is the "ringcast" claim.
type Scopes struct {
	Publish   []string `json:"publish,omitempty"`
	Subscribe []string `json:"subscribe,omitempty"`
}
