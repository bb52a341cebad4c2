package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"buf.build/go/protovalidate"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
)

// maxTokenTTL is the longest lifetime `ringcast token` mints: a token is a
// bearer credential that cannot be revoked before its exp
// (docs/security.md).
const maxTokenTTL = 365 * 24 * time.Hour

// tokenCmd mints an HS256 token from an HMAC secret key file, for
// development and tests (docs/security.md).
func tokenCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", "token --key-file FILE --sub NAME [--publish TOPIC]… [--subscribe TOPIC]… [flags]", stderr)
	keyFile := fs.String("key-file", "", `HMAC secret key file (the server's --jwt-key-file, "hmac:<secret>"); a public key file is refused`)
	var t auth.Token
	var publish, subscribe stringList
	fs.StringVar(&t.Subject, "sub", "", "subject (sub): who the token speaks for")
	fs.Var(&publish, "publish", `topic the token may publish to, and every topic under it (repeatable; "*": every topic)`)
	fs.Var(&subscribe, "subscribe", `topic the token may subscribe to, and every topic under it (repeatable; "*": every topic)`)
	fs.DurationVar(&t.TTL, "ttl", time.Hour, "lifetime (exp = now + ttl), more than 0 and at most 8760h (a year)")
	fs.StringVar(&t.Issuer, "issuer", "", "issuer (iss), for a server with --jwt-issuer")
	fs.StringVar(&t.Audience, "audience", "", "audience (aud), for a server with --jwt-audience")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	if *keyFile == "" || t.Subject == "" {
		return fmt.Errorf("token needs --key-file and --sub")
	}
	if t.TTL <= 0 || t.TTL > maxTokenTTL {
		return fmt.Errorf("--ttl %s: a token lives more than 0 and at most %s (a year); mint short-lived tokens and mint again", t.TTL, "8760h")
	}
	if err := errors.Join(checkGrant("--publish", publish), checkGrant("--subscribe", subscribe)); err != nil {
		return err
	}
	secret, err := auth.ReadSecret(*keyFile)
	if err != nil {
		return err
	}
	t.Publish, t.Subscribe = publish, subscribe
	tok, err := auth.Mint(secret, t)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// checkGrant refuses a grant entry that could match no topic: each must be
// "*" or a topic filter the server takes in a subscribe (lower-case
// segments of a-z, 0-9, ".", "_" and "-" joined by "/", at most 128
// characters), checked by the same rule.
func checkGrant(flag string, grant []string) error {
	var errs []error
	for _, g := range grant {
		if g == "*" {
			continue
		}
		if protovalidate.Validate(&ringcastv1.SubscribeEventsRequest{Topics: []string{g}}) != nil {
			errs = append(errs, fmt.Errorf(`%s %s matches no topic: give "*" or a topic of lower-case segments (a-z, 0-9, ".", "_", "-") joined by "/", at most 128 characters`, flag, strconv.Quote(g)))
		}
	}
	return errors.Join(errs...)
}
