package edge

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	connectcors "connectrpc.com/cors"
	"github.com/rs/cors"
)

// ValidateOrigins checks --cors-origin values: "*" or an origin
// (scheme://host[:port], nothing after it).
func ValidateOrigins(origins []string) error {
	var errs []error
	for _, o := range origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("cors-origin %q: want an origin such as https://console.example.org (scheme, host and port only) or *", o))
		}
	}
	return errors.Join(errs...)
}

// withCORS answers cross-origin requests for Connect, gRPC-Web and /events
// (docs/security.md): preflights (OPTIONS) get 204, and the allowed, exposed
// headers each protocol needs; only the listed origins are allowed, none by
// default. "*" allows every origin, never with credentials; exact origins
// may send credentials (the ringcast_token cookie of /events).
func withCORS(origins []string, next http.Handler) http.Handler {
	opts := cors.Options{
		AllowedMethods: append(connectcors.AllowedMethods(), http.MethodHead),
		AllowedHeaders: append(connectcors.AllowedHeaders(), "Authorization", "Last-Event-ID", "Cache-Control"),
		ExposedHeaders: connectcors.ExposedHeaders(),
		MaxAge:         7200,
	}
	if slices.Contains(origins, "*") {
		opts.AllowedOrigins = []string{"*"}
	} else {
		allowed := make(map[string]bool, len(origins))
		for _, o := range origins {
			allowed[strings.ToLower(o)] = true
		}
		opts.AllowOriginFunc = func(origin string) bool { return allowed[strings.ToLower(origin)] }
		opts.AllowCredentials = len(origins) > 0
	}
	return cors.New(opts).Handler(next)
}

// withHostCheck refuses, with 403 and before anything else runs, requests
// whose Host is neither a loopback name or address nor one of allowed: a
// page on another site that made its own name resolve to 127.0.0.1 (DNS
// rebinding) still sends its own name as Host.
func withHostCheck(allowed []string, log *slog.Logger, next http.Handler) http.Handler {
	return hostCheck(allowed, false, "forbidden: this server answers only to loopback host names (see --allowed-host)", log, next)
}

// hostCheck is withHostCheck, and withSideHostCheck with ipOK: next serves
// a request whose Host is a loopback name or address, a name under
// .localhost, one of allowed or, with ipOK, any IP address; any other gets
// 403 with refusal, and its connection is closed rather than drained of a
// body nobody will read. Each refusal is logged on log at Debug (nil:
// none), never higher: a flood of foreign Host names must not flood the log.
func hostCheck(allowed []string, ipOK bool, refusal string, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	extra := make(map[string]bool, len(allowed))
	for _, h := range allowed {
		extra[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		ok := isLoopbackHost(host) || strings.HasSuffix(host, ".localhost") || extra[host] || extra[strings.ToLower(r.Host)] ||
			(ipOK && net.ParseIP(host) != nil)
		if !ok {
			if log.Enabled(r.Context(), slog.LevelDebug) {
				log.LogAttrs(r.Context(), slog.LevelDebug, "request refused", slog.String("refusal", "host"),
					slog.String("host", r.Host), slog.String("path", r.URL.Path), slog.String("remote", r.RemoteAddr))
			}
			w.Header().Set("Connection", "close")
			http.Error(w, refusal, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withSideHostCheck refuses, with 403, requests to a side listener whose
// Host is not a loopback name, an IP address, or one of allowed: a page
// on another site that made its own name resolve to the listener's
// address (DNS rebinding) still sends its own name as Host, and a side
// listener has no token to stop it. An IP address cannot be such a page's
// name, so scrapers that address the listener by IP need nothing more.
func withSideHostCheck(allowed []string, log *slog.Logger, next http.Handler) http.Handler {
	return hostCheck(allowed, true, "forbidden: this listener answers only to loopback names, IP addresses and --allowed-host names", log, next)
}

// IsLoopbackAddr reports whether a listen address binds loopback only: a
// loopback IP or "localhost". An empty host (":8080") binds every
// interface.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return isLoopbackHost(host)
}

// isLoopbackHost reports whether host (no port) is a loopback name or IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
