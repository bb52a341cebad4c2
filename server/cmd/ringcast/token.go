package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ringcast/ringcast/server/auth"
)

// tokenCmd mints an HS256 token from an HMAC secret key file, for
// development and tests (docs/security.md).
func tokenCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", "token --key-file FILE --sub NAME [--publish TOPIC]… [--subscribe TOPIC]… [flags]", stderr)
	keyFile := fs.String("key-file", "", "HMAC secret key file (the server's --jwt-key-file); other key kinds are refused")
	var t auth.Token
	var publish, subscribe stringList
	fs.StringVar(&t.Subject, "sub", "", "subject (sub): who the token speaks for")
	fs.Var(&publish, "publish", `topic the token may publish to (repeatable; "*": every topic)`)
	fs.Var(&subscribe, "subscribe", `topic the token may subscribe to (repeatable; "*": every topic)`)
	fs.DurationVar(&t.TTL, "ttl", time.Hour, "lifetime (exp = now + ttl)")
	fs.StringVar(&t.Issuer, "issuer", "", "issuer (iss), for a server with --jwt-issuer")
	fs.StringVar(&t.Audience, "audience", "", "audience (aud), for a server with --jwt-audience")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyFile == "" || t.Subject == "" {
		return fmt.Errorf("token needs --key-file and --sub")
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
