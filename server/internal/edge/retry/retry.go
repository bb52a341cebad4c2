// Package retry is how every refusal for a resource says when to try
// again: resource_exhausted with a Retry-After on Connect, gRPC and
// gRPC-Web, HTTP 429 with one on plain HTTP. It imports nothing of the
// edge, so a face answers a store's refusal (a dedupe window full) the
// way the edge answers its own. Every such refusal is made here, so each
// carries a Retry-After: the Go and TypeScript clients wait at least that
// long before they try again, however short their own backoff.
package retry

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
)

// Exhausted returns err as resource_exhausted, with a Retry-After of after
// (whole seconds, at least 1) in its metadata: a Connect unary response's
// HTTP header (with status 429), a stream's or a gRPC or gRPC-Web call's
// trailer (or header, on a response that has nothing but trailers).
func Exhausted(err error, after time.Duration) *connect.Error {
	ce := connect.NewError(connect.CodeResourceExhausted, err)
	ce.Meta().Set("Retry-After", RetryAfterValue(after))
	return ce
}

// WriteExhausted answers a plain HTTP request (the SSE face) with 429, a
// Retry-After of after and msg as the one-line body.
func WriteExhausted(w http.ResponseWriter, msg string, after time.Duration) {
	w.Header().Set("Retry-After", RetryAfterValue(after))
	http.Error(w, "resource_exhausted: "+msg, http.StatusTooManyRequests)
}

// RetryAfterValue is a Retry-After header value for d: whole seconds,
// rounded up, at least 1.
func RetryAfterValue(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
