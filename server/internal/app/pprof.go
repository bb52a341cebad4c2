package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/ringcast/ringcast/server/internal/edge/limit"
)

// pprofAddr resolves --pprof-addr: a bare port ("6060") or a port with no
// host (":6060") listens on loopback only; a host given explicitly
// ("0.0.0.0:6060", "[::1]:6060", "host:6060") is used as is.
func pprofAddr(addr string) (string, error) {
	if _, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("pprof-addr %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// pprofHandler serves net/http/pprof's index and profiles under
// /debug/pprof/, on a mux of its own (nothing is registered on
// http.DefaultServeMux or on the main handler).
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// servePprof listens on cfg.PprofAddr (see pprofAddr), logs the bound
// address and serves pprof there, behind the side listeners' edge
// (sideEdge; no write timeout: a profile takes as long as it was asked
// to), until ctx ends. It returns once listening; the returned function
// stops it and waits.
func servePprof(ctx context.Context, cfg Config, lim *limit.Limiter) (stop func(), err error) {
	log := cfg.Logger
	addr, err := pprofAddr(cfg.PprofAddr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	ln, srv := sideEdge(cfg, lim, ln, pprofHandler(), 0)
	log.Info("pprof serving", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener failed", "err", err)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		_ = srv.Close() // profiles in progress are cut: nothing to drain
	}()
	return func() { cancel(); <-done }, nil
}
