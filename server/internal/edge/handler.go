package edge

import (
	"log/slog"
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
	// AccessLog, when set, gets one line per request (withAccessLog);
	// nil: no access log, and nothing of it in the chain.
	AccessLog *slog.Logger
	// Log gets the Host check's refusals, at Debug (nil: none).
	Log *slog.Logger
}

// Handler puts the edge in front of routes, outermost first: the access log
// (withAccessLog, with Options.AccessLog), the read deadline
// (withReadDeadline), the Host check, CORS, the write timeout (WriteGuard)
// and the Connect-Timeout-Ms check.
func Handler(routes http.Handler, o Options) http.Handler {
	h := withTimeoutCheck(routes)
	if o.Writes != nil {
		h = o.Writes.wrap(h)
	}
	h = withCORS(o.CORSOrigins, h)
	if o.CheckHost {
		h = withHostCheck(o.AllowedHosts, o.Log, h)
	}
	h = withReadDeadline(o.ReadTimeout, o.Streams, h)
	if o.AccessLog != nil {
		h = withAccessLog(o.AccessLog, h)
	}
	return h
}

// SideHandler puts the edge of a side listener (metrics, pprof) in front of
// h: the read deadline, and a Host check that also takes IP addresses
// (withSideHostCheck), its refusals logged on log at Debug (nil: none).
func SideHandler(h http.Handler, readTimeout time.Duration, allowedHosts []string, log *slog.Logger) http.Handler {
	return withReadDeadline(readTimeout, nil, withSideHostCheck(allowedHosts, log, h))
}
