package ringcast

//go:generate sh -c "cd ../../.. && go run ./clients/conformance/gendefaults"

import (
	"errors"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// Retryable reports whether a subscription retries after err (with its
// cursor, after a backoff delay) rather than returning it to the caller.
//
// Retried: failures of the path or of one server instance, after which the
// same request can succeed —
//
//	unavailable, unknown, internal, deadline_exceeded, resource_exhausted,
//	aborted, data_loss, canceled (when the caller's context is not done:
//	a proxy or server cancelled the stream), and errors that carry no code
//	(network errors).
//
// Returned to the caller: the request itself is wrong or not allowed, and
// repeating it cannot help —
//
//	unauthenticated, permission_denied, invalid_argument,
//	failed_precondition, out_of_range, not_found, already_exists,
//	unimplemented.
//
// The permanent list is shared with the TypeScript client
// (clients/conformance/defaults.json). An unservable cursor is never an error (the server answers it with
// ResyncRequired, which the subscription handles itself).
func Retryable(err error) bool {
	if err == nil {
		return true
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return true
	}
	return !slices.Contains(permanentCodes, ce.Code())
}

// TokenExpired reports whether err is the server's end of a stream (or
// refusal of a call) because its token expired: code unauthenticated with
// the message "token expired" (docs/security.md; the wording is kept in
// clients/conformance/defaults.json, which a server test checks). A
// subscription reconnects once with a fresh token after it; to anything
// else it is permanent.
func TokenExpired(err error) bool {
	var ce *connect.Error
	return errors.As(err, &ce) && ce.Code() == connect.CodeUnauthenticated && ce.Message() == tokenExpiredMessage
}

// KeyReused reports whether err is the server's refusal of a publish whose
// idempotency key its publisher already used, within the dedupe window,
// for a commit with other facts: code already_exists (docs/protocol.md,
// "Publish"). It is permanent: Publish and PublishBatch return it at once.
// A retry must send the same facts; a new commit needs a new key.
func KeyReused(err error) bool {
	var ce *connect.Error
	return errors.As(err, &ce) && ce.Code() == connect.CodeAlreadyExists
}

// retryAfter is the wait the server asked for with a resource_exhausted
// refusal (a per-client limit: its Retry-After header, in seconds), or 0.
// A retry then waits at least that long, whatever the backoff says, so a
// client over a limit backs off instead of hammering the server.
func retryAfter(err error) time.Duration {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		return 0
	}
	return parseRetryAfter(ce.Meta().Get("Retry-After"))
}

// parseRetryAfter reads a Retry-After value as every client does
// (clients/conformance/retry-after.json): whole seconds in ASCII digits,
// spaces or tabs around them allowed, capped at 5 minutes
// (retryAfterCap); anything else is no wait.
func parseRetryAfter(v string) time.Duration {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0
	}
	capSecs := int64(retryAfterCap / time.Second)
	var secs int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0
		}
		if secs <= capSecs {
			secs = secs*10 + int64(c-'0')
		}
	}
	return min(time.Duration(min(secs, capSecs+1))*time.Second, retryAfterCap)
}
