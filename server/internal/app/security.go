package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/edge"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
	"github.com/ringcast/ringcast/server/internal/face/rpc"
	"github.com/ringcast/ringcast/server/internal/face/sse"
)

// The values of Config.Auth.
const (
	AuthNone = "none"
	AuthJWT  = "jwt"
)

// validateSecurity checks the auth settings against the address: a server
// reachable from other machines does not run without auth unless told to.
func (c Config) validateSecurity() error {
	var errs []error
	switch c.Auth {
	case AuthNone:
		if !edge.IsLoopbackAddr(c.Addr) && !c.AllowUnauthenticated {
			errs = append(errs, fmt.Errorf("--addr %s is not a loopback address and --auth is none: anyone who can reach it could publish and read everything; set --auth jwt with --jwt-key-file, or pass --allow-unauthenticated to serve it open anyway", c.Addr))
		}
	case AuthJWT:
		if c.JWTKeyFile == "" {
			errs = append(errs, errors.New("--auth jwt needs --jwt-key-file"))
		}
	default:
		errs = append(errs, fmt.Errorf("auth must be none or jwt, not %q", c.Auth))
	}
	errs = append(errs, edge.ValidateOrigins(c.CORSOrigins))
	if c.MetricsAddr != "" && c.DisableMetrics {
		errs = append(errs, errors.New("metrics-addr and metrics=false contradict each other"))
	}
	return errors.Join(errs...)
}

// authMiddleware returns the token checks for cfg, or nil with auth none.
func authMiddleware(cfg Config, obs auth.Observer) (*auth.Middleware, error) {
	if cfg.Auth != AuthJWT {
		return nil, nil
	}
	v, err := auth.NewVerifier(auth.Config{KeyFile: cfg.JWTKeyFile, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience})
	if err != nil {
		return nil, err
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("jwt keys loaded", "file", cfg.JWTKeyFile, "form", v.Kind(), "kinds", strings.Join(v.KeyKinds(), ","))
	}
	return auth.NewMiddleware(v, obs, cfg.Logger), nil
}

// guardRPC puts the token check in front of the EventService handler;
// GetServerStatus stays open (health checkers use it; it holds nothing
// secret).
func guardRPC(mw *auth.Middleware, h http.Handler) http.Handler {
	if mw == nil {
		return h
	}
	return mw.Connect(rpc.Face, h, ringcastv1connect.EventServiceGetServerStatusProcedure)
}

// guardSSE puts the token check in front of GET /events.
func guardSSE(mw *auth.Middleware, h http.Handler) http.Handler {
	if mw == nil {
		return h
	}
	return mw.EventSource(sse.Face, h)
}

// logSecurity logs how the server is exposed, once at start.
func logSecurity(cfg Config, log *slog.Logger) {
	if cfg.Auth == AuthNone && !edge.IsLoopbackAddr(cfg.Addr) {
		log.Warn("serving without authentication on a non-loopback address (--allow-unauthenticated): anyone who can reach it can publish and read everything", "addr", cfg.Addr)
	}
	logSideListeners(cfg, log)
}

// hostCheckApplies reports whether the Host check guards cfg's server: an
// open (auth none) server on loopback.
func hostCheckApplies(cfg Config) bool {
	return cfg.Auth == AuthNone && edge.IsLoopbackAddr(cfg.Addr)
}
