package auth

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/topic"
)

// Grant is a token's list of topic entries (the "publish" or "subscribe"
// claim). An entry matches a topic as a subscribe filter does
// (topic.Match); the entry "*" matches every topic; an empty grant
// matches nothing.
type Grant []string

// All reports whether g grants every topic.
func (g Grant) All() bool {
	for _, e := range g {
		if e == "*" {
			return true
		}
	}
	return false
}

// Allows reports whether g grants topic t (or, equally, the whole of a
// subscribe filter entry: every topic under it).
func (g Grant) Allows(t string) bool {
	for _, e := range g {
		if e == "*" || topic.Match(e, t) {
			return true
		}
	}
	return false
}

// ctxKey is the request-context key of an authenticated request's
// identity and refusal counter. It must stay a context value: the token is
// checked by HTTP middleware in front of connect (and of GET /events), and
// connect-go gives a handler no other way to reach what that middleware
// learned. The counter rides with the identity so that a refusal decided
// later, in a stream's or a publish's admission (ScopeSubscribe,
// CheckPublish, through edge.Admitter), is counted
// here, under the face that checked the token, as the middleware's own
// refusals are — no face counts auth's refusals itself.
type ctxKey struct{}

// authenticated is what an authenticated request's context carries: the
// identity, and where to count a refusal decided later (forbidden).
type authenticated struct {
	id     *Identity
	face   string
	reject func(face string, id *Identity, err *Error)
}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, &authenticated{id: id})
}

func withRequest(ctx context.Context, id *Identity, face string, reject func(string, *Identity, *Error)) context.Context {
	return context.WithValue(ctx, ctxKey{}, &authenticated{id: id, face: face, reject: reject})
}

// FromContext returns the identity of the request ctx belongs to, or nil
// when the server runs without auth.
func FromContext(ctx context.Context) *Identity {
	if a, _ := ctx.Value(ctxKey{}).(*authenticated); a != nil {
		return a.id
	}
	return nil
}

// forbid counts a forbidden refusal for ctx's request and returns err.
func forbid(ctx context.Context, msg string) *Error {
	return reject(ctx, &Error{Reason: ReasonForbidden, msg: msg})
}

// reject counts err's refusal for ctx's request and returns err.
func reject(ctx context.Context, err *Error) *Error {
	if a, _ := ctx.Value(ctxKey{}).(*authenticated); a != nil && a.reject != nil {
		a.reject(a.face, a.id, err)
	}
	return err
}

// Subject is the verified token's sub for the request ctx belongs to, and
// whether the request carried a verified token at all.
func Subject(ctx context.Context) (string, bool) {
	id := FromContext(ctx)
	if id == nil {
		return "", false
	}
	return id.Subject, true
}

// Publisher is the key space of ctx's idempotency keys (hub.Key): "" for
// the one shared space without auth; with a verified token, its issuer and
// subject, so two publishers never share a key, and one publisher's keys
// are the same whichever face, replica or token (of the same iss and sub)
// it publishes with. Tokens without a sub share their issuer's space, and
// tokens with neither iss nor sub share one space of their own, apart
// from the space without auth. The form is the issuer's length, a colon,
// the issuer, the subject: no two pairs give the same string.
func Publisher(ctx context.Context) string {
	id := FromContext(ctx)
	if id == nil {
		return ""
	}
	return "jwt:" + strconv.Itoa(len(id.Issuer)) + ":" + id.Issuer + id.Subject
}

// ClientID is the identity requests are accounted to: "sub:" and the
// token's subject when auth is on, else "ip:" and the host part of
// remoteAddr (an http.Request's RemoteAddr or a connect.Peer's Addr).
func ClientID(ctx context.Context, remoteAddr string) string {
	var buf [64]byte
	return string(AppendClientID(buf[:0], ctx, remoteAddr))
}

// AppendClientID appends ClientID(ctx, remoteAddr) to dst.
func AppendClientID(dst []byte, ctx context.Context, remoteAddr string) []byte {
	if sub, ok := Subject(ctx); ok {
		return append(append(dst, "sub:"...), sub...)
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	return append(append(dst, "ip:"...), host...)
}

// CheckPublish refuses a commit holding any fact outside the publish grant
// of ctx's identity (nil without auth). The whole commit is refused.
func CheckPublish(ctx context.Context, facts []*ringcastv1.Fact) error {
	id := FromContext(ctx)
	if id == nil {
		return nil
	}
	for i, f := range facts {
		if !id.Publish.Allows(f.GetTopic()) {
			return forbid(ctx, fmt.Sprintf("facts[%d]: topic %s is outside the token's publish grant", i, strconv.Quote(f.GetTopic())))
		}
	}
	return nil
}

// MaySubscribeAll reports whether ctx's identity (nil without auth: yes)
// may subscribe to every one of topics: whether a stream of its, asking
// for no topics, would be sent each of them (ScopeSubscribe). An answer
// for a whole commit, such as its publish outcome, is given only to a
// caller who may read every fact of it (edge.Admitter, hub.Hub.Outcome).
func MaySubscribeAll(ctx context.Context, topics []string) bool {
	id := FromContext(ctx)
	if id == nil {
		return true
	}
	for _, t := range topics {
		if !id.Subscribe.Allows(t) {
			return false
		}
	}
	return true
}

// Scope is what ctx's identity makes of a subscribe: the topics filter the
// stream takes and the instant it ends. The hub applies it to every
// stream, on every face (edge.Admitter, hub.Config.Admit).
type Scope struct {
	// Topics is the filter asked for, or, when none was and the subscribe
	// grant is not "*", the grant itself.
	Topics []string
	// Expiry is the token's Deadline (zero: no auth): the one instant from
	// which the verifier refuses the same token, where the stream ends.
	Expiry time.Time
}

// ScopeSubscribe fits a subscribe asking for topics to ctx's identity (nil
// without auth: the topics as asked, no expiry): a named topic outside the
// subscribe grant refuses it; with no topics named, the grant becomes the
// stream's topic filter, so facts outside it are never sent and Progress
// covers them. A token whose Deadline has passed since it was verified is
// refused (ReasonExpired), so no stream starts with it; an accepted stream
// ends at the Deadline (Scope.Expiry).
func ScopeSubscribe(ctx context.Context, topics []string) (Scope, error) {
	id := FromContext(ctx)
	if id == nil {
		return Scope{Topics: topics}, nil
	}
	if !id.Valid(time.Now()) {
		return Scope{}, reject(ctx, Expired())
	}
	for i, t := range topics {
		if !id.Subscribe.Allows(t) {
			return Scope{}, forbid(ctx, fmt.Sprintf("topics[%d]: %s is outside the token's subscribe grant", i, strconv.Quote(t)))
		}
	}
	if len(topics) == 0 && !id.Subscribe.All() {
		if len(id.Subscribe) == 0 {
			return Scope{}, forbid(ctx, "the token grants no topics to subscribe to")
		}
		topics = append([]string(nil), id.Subscribe...)
	}
	return Scope{Topics: topics, Expiry: id.Deadline}, nil
}
