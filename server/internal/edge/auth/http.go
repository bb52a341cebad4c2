package auth

import (
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// Where a token is read from. EventSource cannot set headers, so GET
// /events also takes the query parameter and the cookie (docs/security.md
// weighs the query token's trade-off: URLs land in access logs).
const (
	QueryParam = "access_token"
	CookieName = "ringcast_token"
)

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
	if tok := r.URL.Query().Get(QueryParam); tok != "" {
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

func (m *Middleware) reject(face string, reason Reason) {
	if m.obs != nil {
		m.obs.AuthRejected(face, reason)
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
// rejections on obs (may be nil) and logs them at debug level.
func NewMiddleware(v *Verifier, obs Observer, log *slog.Logger) *Middleware {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Middleware{v: v, obs: obs, log: log, errors: connect.NewErrorWriter()}
}

func (m *Middleware) rejected(face string, r *http.Request, err *Error) {
	m.reject(face, err.Reason)
	m.log.Debug("request refused", "face", face, "reason", err.Reason, "path", r.URL.Path, "remote", r.RemoteAddr, "error", err.Unwrap())
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
			_ = m.errors.Write(w, r, connect.NewError(connect.CodeUnauthenticated, err))
			return
		}
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
		next.ServeHTTP(w, r.WithContext(withRequest(r.Context(), id, face, m.reject)))
	})
}
