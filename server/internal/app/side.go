package app

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ringcast/ringcast/server/internal/edge"
	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// sideMaxConns bounds the connections a side listener (--metrics-addr,
// --pprof-addr) holds at once; one client may hold a quarter of them.
// Scrapers and profilers open one or two at a time.
const sideMaxConns = 64

// sideEdge gives a side listener the main port's edge: a connection cap
// (counted as the main port's are), and a server whose handler checks Host
// and bounds a request body's read (edge.SideHandler) before anything
// else, with the main port's header and idle timeouts. writeTimeout (0:
// none) bounds writing a response.
func sideEdge(cfg Config, lim *limit.Limiter, ln net.Listener, h http.Handler, writeTimeout time.Duration) (net.Listener, *http.Server) {
	return lim.SideListener(ln, sideMaxConns, sideMaxConns/4), &http.Server{
		Handler:           edge.SideHandler(h, cfg.Edge.ReadTimeout, cfg.AllowedHosts, cfg.Logger),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.Edge.IdleTimeout,
		WriteTimeout:      writeTimeout,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
}

// logSideListeners warns, once at start, about side listeners reachable
// from other machines.
func logSideListeners(cfg Config, log *slog.Logger) {
	if cfg.MetricsAddr != "" && !cfg.DisableMetrics && !edge.IsLoopbackAddr(cfg.MetricsAddr) {
		log.Warn("serving /metrics on a non-loopback address (--metrics-addr): anyone who can reach it reads the server's counts, limits and epoch; bind 127.0.0.1 unless a scraper on another machine needs it", "metrics_addr", cfg.MetricsAddr)
	}
	if cfg.PprofAddr != "" {
		if addr, err := pprofAddr(cfg.PprofAddr); err == nil && !edge.IsLoopbackAddr(addr) {
			log.Warn("serving pprof on a non-loopback address (--pprof-allow-remote): anyone who can reach it reads the command line, credentials given in flags included, and the heap, and can make the server profile itself", "pprof_addr", addr)
		}
	}
}
