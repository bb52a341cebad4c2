package edge

import (
	"net/http"
	"time"
)

// Options is what Handler needs besides the routes.
type Options struct {
	// ReadTimeout bounds reading a request body (Config.ReadTimeout).
	ReadTimeout time.Duration
	// Streams are the paths of the streams served (StreamPaths): their
	// read deadline is cleared once their request is read.
	Streams map[string]bool
	// CheckHost refuses requests whose Host is neither a loopback name
	// nor one of AllowedHosts (an open server on loopback: DNS
	// rebinding).
	CheckHost    bool
	AllowedHosts []string
	// CORSOrigins are the origins allowed cross-origin.
	CORSOrigins []string
	// Writes cuts responses whose writes block (nil: none).
	Writes *WriteGuard
}

// Handler puts the edge in front of routes, outermost first: the read
// deadline (withReadDeadline), the Host check, CORS, the write timeout
// (WriteGuard) and the Connect-Timeout-Ms check.
func Handler(routes http.Handler, o Options) http.Handler {
	h := withTimeoutCheck(routes)
	if o.Writes != nil {
		h = o.Writes.wrap(h)
	}
	h = withCORS(o.CORSOrigins, h)
	if o.CheckHost {
		h = withHostCheck(o.AllowedHosts, h)
	}
	return withReadDeadline(o.ReadTimeout, o.Streams, h)
}

// SideHandler puts the edge of a side listener (metrics, pprof) in front of
// h: the read deadline, and a Host check that also takes IP addresses
// (withSideHostCheck).
func SideHandler(h http.Handler, readTimeout time.Duration, allowedHosts []string) http.Handler {
	return withReadDeadline(readTimeout, nil, withSideHostCheck(allowedHosts, h))
}
