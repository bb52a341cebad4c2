package auth

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/internal/edge/access"
	"github.com/ringcast/ringcast/server/internal/face/names"
)

// CookieName is the cookie a token is read from on GET /events, after
// the query parameter (names.TokenParam): EventSource cannot set headers.
const CookieName = "ringcast_token"

// Observer counts rejections (ringcast_auth_rejections_total{face,reason}).
type Observer interface {
	AuthRejected(face string, reason Reason)
}

// Extract returns the request's bearer token: the Authorization header
// ("Bearer <jwt>", scheme case-insensitive) and, when eventSource is true,
// then the access_token query parameter and the ringcast_token cookie. An
// Authorization header of another scheme is returned whole, so it fails
// verification as invalid rather than passing as missing.
func Extract(r *http.Request, eventSource bool) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return h
	}
	if !eventSource {
		return ""
	}
	if tok := r.URL.Query().Get(names.TokenParam); tok != "" {
		return tok
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

// Code is the RPC code that answers the refusal: permission_denied for a
// token outside its grants, unauthenticated for every other.
func (e *Error) Code() connect.Code {
	if e.Reason == ReasonForbidden {
		return connect.CodePermissionDenied
	}
	return connect.CodeUnauthenticated
}

// Refuse writes the HTTP answer to a refusal of GET /events: 403 for a
// token outside its grants, else 401 with a Bearer challenge.
func (e *Error) Refuse(w http.ResponseWriter) {
	if e.Reason == ReasonForbidden {
		http.Error(w, e.Error(), http.StatusForbidden)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ringcast"`)
	http.Error(w, e.Error(), http.StatusUnauthorized)
}

// Authenticate verifies the request's token and returns the identity.
func (v *Verifier) Authenticate(r *http.Request, eventSource bool) (*Identity, *Error) {
	id, err := v.Verify(Extract(r, eventSource))
	if err != nil {
		return nil, err.(*Error)
	}
	return id, nil
}

// count counts a refusal (ringcast_auth_rejections_total).
func (m *Middleware) count(face string, reason Reason) {
	if m.obs != nil {
		m.obs.AuthRejected(face, reason)
	}
}

// reject counts and logs, at Debug, a refusal decided after the token was
// verified: a topic outside a grant, a token expired since
// (ScopeSubscribe, CheckPublish).
func (m *Middleware) reject(face string, id *Identity, err *Error) {
	m.count(face, err.Reason)
	if m.log.Enabled(context.Background(), slog.LevelDebug) {
		m.log.LogAttrs(context.Background(), slog.LevelDebug, "request refused", slog.String("refusal", "auth"),
			slog.String("face", face), slog.String("reason", string(err.Reason)), slog.String("client", "sub:"+id.Subject),
			slog.String("error", err.Error()))
	}
}

// Middleware authenticates requests before they reach a handler.
type Middleware struct {
	v      *Verifier
	obs    Observer
	log    *slog.Logger
	errors *connect.ErrorWriter
}

// NewMiddleware returns middleware that verifies with v, counts
// rejections on obs (may be nil) and logs them at Debug (refusal=auth),
// never higher: a flood of bad tokens must not flood the log.
func NewMiddleware(v *Verifier, obs Observer, log *slog.Logger) *Middleware {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Middleware{v: v, obs: obs, log: log, errors: connect.NewErrorWriter()}
}

// rejected counts and logs, at Debug, a request refused for its token.
func (m *Middleware) rejected(face string, r *http.Request, err *Error) {
	m.count(face, err.Reason)
	if m.log.Enabled(r.Context(), slog.LevelDebug) {
		m.log.LogAttrs(r.Context(), slog.LevelDebug, "request refused", slog.String("refusal", "auth"),
			slog.String("face", face), slog.String("reason", string(err.Reason)), slog.String("path", r.URL.Path),
			slog.String("remote", r.RemoteAddr), slog.Any("error", err.Unwrap()))
	}
}

// Connect guards an RPC handler (Connect, gRPC, gRPC-Web): a request
// without a valid token is answered unauthenticated in its own protocol
// and never reaches next. Procedures listed in open (full paths such as
// "/ringcast.v1.EventService/GetServerStatus") are served without a token.
func (m *Middleware) Connect(face string, next http.Handler, open ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		id, err := m.v.Authenticate(r, false)
		if err != nil {
			m.rejected(face, r, err)
			access.SetCode(r.Context(), connect.CodeUnauthenticated)
			_ = m.errors.Write(w, r, connect.NewError(connect.CodeUnauthenticated, err))
			return
		}
		access.SetSubject(r.Context(), id.Subject)
		next.ServeHTTP(w, r.WithContext(withRequest(r.Context(), id, face, m.reject)))
	})
}

// EventSource guards GET /events: a request without a valid token is
// answered 401 before any stream opens.
func (m *Middleware) EventSource(face string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := m.v.Authenticate(r, true)
		if err != nil {
			m.rejected(face, r, err)
			err.Refuse(w)
			return
		}
		access.SetSubject(r.Context(), id.Subject)
		next.ServeHTTP(w, r.WithContext(withRequest(r.Context(), id, face, m.reject)))
	})
}
