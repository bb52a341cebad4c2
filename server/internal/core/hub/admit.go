package hub

import (
	"context"
	"fmt"
	"time"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Admission is what the edge decides for a stream before it starts: the
// topics filter it takes and the instant it ends. The hub applies it
// itself (Subscribe), so a face cannot serve a topic its caller was not
// granted, nor past its credentials' end, even if it checks nothing.
type Admission struct {
	// Topics is the stream's filter (nil: every topic).
	Topics []string
	// Expiry, when set, ends the stream with ErrExpired (Request.Expiry).
	Expiry time.Time
}

// Admitter is the one seam through which the edge decides who may have
// what (Config.Admit): every stream's admission, every publish's, the key
// space and the client of the caller, and which outcomes it may read. The
// hub asks it at its entry points (Subscribe and Admit, PublishCommit and
// PublishBatch, Outcome), so a face passes its caller's context (with its
// peer, ContextWithPeer) and checks nothing itself. A refusal is answered
// by the face as it is: the Admitter's errors carry their own answer on
// each wire. The edge's is edge.Admitter.
type Admitter interface {
	// AdmitStream decides the Admission of a stream asking for topics on
	// behalf of the caller ctx belongs to, or refuses it.
	AdmitStream(ctx context.Context, face string, topics []string) (Admission, error)
	// AdmitPublish refuses a commit of facts the caller may not publish
	// (nil: it may), naming the fact at fault.
	AdmitPublish(ctx context.Context, facts []*ringcastv1.Fact) error
	// Publisher is the caller's key space (Key.Publisher): its
	// idempotency keys are its own, apart from every other caller's.
	Publisher(ctx context.Context) string
	// Client is the caller as requests are accounted to it: whose share
	// of the dedupe table its new keys take. ctx carries its peer.
	Client(ctx context.Context) string
	// MayRead reports whether the caller may read a commit of every one
	// of topics (its publish outcome).
	MayRead(ctx context.Context, topics []string) bool
}

// admitted is the mark Admit leaves on a Request: what the Admitter
// decided. It is unexported, so only Admit sets it.
type admitted struct {
	Admission
}

// Admit runs the Admitter (Config.Admit; none: the topics as asked) on
// req and returns req admitted: Subscribe then serves it as admitted. A
// face that must answer a refusal before it starts its response (SSE,
// whose status line goes out before the stream) calls Admit first;
// Subscribe admits a request that was not. Either way every stream is
// admitted once, by the one Admitter, before it is counted.
func (h *Hub) Admit(ctx context.Context, req Request) (Request, error) {
	if req.admission != nil {
		return req, nil
	}
	a := Admission{Topics: req.Topics}
	if h.cfg.Admit != nil {
		var err error
		if a, err = h.cfg.Admit.AdmitStream(ctx, req.Face, req.Topics); err != nil {
			return Request{}, err
		}
	}
	req.admission = &admitted{a}
	return req, nil
}

// scoped returns an admitted req as its admission says: its topics
// filter the admission's, and its expiry the earlier of its own and the
// admission's.
func (req Request) scoped() Request {
	a := req.admission
	req.Topics = a.Topics
	if !a.Expiry.IsZero() && (req.Expiry.IsZero() || a.Expiry.Before(req.Expiry)) {
		req.Expiry = a.Expiry
	}
	return req
}

// admitPublish is the publish's admission for PublishCommit and
// PublishBatch (batch: commits are named, as the hub's own refusals of
// one commit of a batch are): every commit's facts, then, for commits
// with an idempotency key, the caller's key space (Commit.Publisher) and
// the client its new keys count against, in the context returned. Without
// an Admitter the commits stand as given and the client is "".
func (h *Hub) admitPublish(ctx context.Context, commits []Commit, batch bool) (context.Context, error) {
	a := h.cfg.Admit
	if a == nil {
		return ctx, nil
	}
	keyed := false
	for i := range commits {
		if err := a.AdmitPublish(ctx, commits[i].Facts); err != nil {
			if batch {
				return nil, fmt.Errorf("commits[%d].%w", i, err)
			}
			return nil, err
		}
		keyed = keyed || commits[i].IdempotencyKey != ""
	}
	if !keyed {
		return ctx, nil
	}
	publisher := a.Publisher(ctx)
	for i := range commits {
		if commits[i].IdempotencyKey != "" {
			commits[i].Publisher = publisher
		}
	}
	return context.WithValue(ctx, clientKey{}, a.Client(ctx)), nil
}

type clientKey struct{}

// clientFrom is the client admitPublish put in ctx.
func clientFrom(ctx context.Context) string {
	id, _ := ctx.Value(clientKey{}).(string)
	return id
}

// peerContext is a context naming its caller's address (ContextWithPeer):
// one allocation per call, where a context value would take two.
type peerContext struct {
	context.Context
	addr string
}

type peerKey struct{}

func (c *peerContext) Value(key any) any {
	if key == (peerKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// ContextWithPeer returns ctx naming the network address of the caller
// (an http.Request's RemoteAddr, a connect.Peer's Addr), for the
// Admitter to tell the caller by (Admitter.Client). Every face sets it
// on the context it gives the hub.
func ContextWithPeer(ctx context.Context, addr string) context.Context {
	return &peerContext{Context: ctx, addr: addr}
}

// Peer is the address ContextWithPeer put in ctx ("": none).
func Peer(ctx context.Context) string {
	if c, _ := ctx.Value(peerKey{}).(*peerContext); c != nil {
		return c.addr
	}
	return ""
}

// Client is the caller of ctx (with its peer, ContextWithPeer) as the
// Admitter names it, for a face's logs ("" without an Admitter).
func (h *Hub) Client(ctx context.Context) string {
	if h.cfg.Admit == nil {
		return ""
	}
	return h.cfg.Admit.Client(ctx)
}
