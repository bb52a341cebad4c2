package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server   string
	token    string
	protocol string
	retry    bool
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "http://127.0.0.1:8080", "ringcast server URL, with its scheme: http:// or https://")
	fs.StringVar(&c.token, "token", "", "bearer token, when the server requires auth")
	fs.StringVar(&c.protocol, "protocol", "connect", "wire protocol: connect, grpc or grpcweb")
	fs.BoolVar(&c.retry, "retry", false, "when no ringcast answers the first request (nothing listening yet, a network error, unavailable), keep trying with backoff until one does or the command is interrupted; without it the command exits 1 at once, saying why")
}

// client checks --server and --protocol and returns the client.
func (c *clientFlags) client() (*ringcast.Client, error) {
	if err := checkServerURL(c.server); err != nil {
		return nil, err
	}
	p, err := ringcast.ParseProtocol(c.protocol)
	if err != nil {
		return nil, err
	}
	opts := []ringcast.Option{ringcast.WithProtocol(p)}
	if c.token != "" {
		opts = append(opts, ringcast.WithToken(c.token))
	}
	return ringcast.NewClient(c.server, opts...), nil
}

// checkServerURL accepts an http:// or https:// URL with a host. No scheme
// is assumed: "localhost:8080" could mean either, and a guess that picks
// the wrong one fails later with a less clear error.
func checkServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	if !strings.Contains(raw, "://") {
		return fmt.Errorf("--server %q has no scheme: want a URL such as http://%s (or https://)", raw, raw)
	}
	return fmt.Errorf("--server %q: want an http:// or https:// URL with a host, such as http://127.0.0.1:8080", raw)
}

// explain rewrites an error of a request that no ringcast answered into one
// line that says so: the server could not be reached, or something answered
// that is not a ringcast server (an HTML page, a 404, another protocol).
// An error the server sent (a wire error: unauthenticated, a limit, …) is
// returned as it is.
func (c *clientFlags) explain(err error) error {
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) || connect.IsWireError(ce) ||
		ce.Code() == connect.CodeCanceled || ce.Code() == connect.CodeDeadlineExceeded {
		return err
	}
	msg := strings.Join(strings.Fields(ce.Message()), " ") // one line
	var (
		op   *net.OpError
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		rec  tls.RecordHeaderError
	)
	if errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &cert) || errors.As(err, &rec) {
		return fmt.Errorf("cannot reach a ringcast server at %s: %s", c.server, msg)
	}
	return fmt.Errorf("%s answered, but not as a ringcast server speaking %s (is --server right?): %s", c.server, c.protocol, msg)
}

// transient reports whether --retry waits and tries a failed first request
// again: nothing answered (a network error), or the answer is one the
// client retries (ringcast.Retryable: unavailable, resource_exhausted, …).
// A ringcast refusal that repeating cannot fix (unauthenticated,
// invalid_argument, …) and an answer from something that is not ringcast
// with such a code (a 404: unimplemented) are not.
func transient(err error) bool { return ringcast.Retryable(err) }

// firstRequest runs the command's first request, f. Its error is explained
// (explain); with --retry a transient one is retried with the client's
// backoff until f succeeds or ctx ends, the first failure said once on
// stderr.
func firstRequest[T any](ctx context.Context, c *clientFlags, stderr io.Writer, cmd string, f func(context.Context) (T, error)) (T, error) {
	var last error // the last failure before ctx ended
	for attempt := 0; ; attempt++ {
		v, err := f(ctx)
		if err != nil && ctx.Err() != nil && last != nil {
			return v, c.explain(last) // interrupted while retrying: why it was retrying
		}
		if err == nil || !c.retry || !transient(err) || ctx.Err() != nil {
			return v, c.explain(err)
		}
		last = err
		if attempt == 0 {
			fmt.Fprintf(stderr, "ringcast %s: %v; retrying (--retry)\n", cmd, c.explain(err))
		}
		t := time.NewTimer(ringcast.DefaultBackoff.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, c.explain(err)
		case <-t.C:
		}
	}
}

// reach waits, with --retry, until a ringcast server answers
// GetServerStatus (firstRequest); without it, it does nothing: the command's own
// first request then says why it failed.
func (c *clientFlags) reach(ctx context.Context, rc *ringcast.Client, stderr io.Writer, cmd string) error {
	if !c.retry {
		return nil
	}
	_, err := firstRequest(ctx, c, stderr, cmd, func(ctx context.Context) (any, error) { return rc.Status(ctx) })
	return err
}
