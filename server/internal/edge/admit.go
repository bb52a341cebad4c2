package edge

import (
	"context"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
)

// Admitter is the edge's hub.Admitter, the one seam through which every
// face's requests are admitted (hub.Config.Admit): the caller's token
// (package auth) decides a stream's topics and its end, which commits it
// may publish, its key space and which outcomes it may read. Without
// auth, a stream takes the topics as asked and does not expire, every
// commit is admitted, and every caller shares one key space. A refusal
// is an *auth.Error, which answers itself on each wire: its Code on
// Connect, gRPC and gRPC-Web, its Refuse on HTTP (SSE).
type Admitter struct{}

var _ hub.Admitter = Admitter{}

// AdmitStream fits the stream to the token (auth.ScopeSubscribe).
func (Admitter) AdmitStream(ctx context.Context, _ string, topics []string) (hub.Admission, error) {
	scope, err := auth.ScopeSubscribe(ctx, topics)
	if err != nil {
		return hub.Admission{}, err
	}
	return hub.Admission{Topics: scope.Topics, Expiry: scope.Expiry}, nil
}

// AdmitPublish refuses a commit outside the token's publish grant
// (auth.CheckPublish).
func (Admitter) AdmitPublish(ctx context.Context, facts []*ringcastv1.Fact) error {
	return auth.CheckPublish(ctx, facts)
}

// Publisher is the token's key space (auth.Publisher).
func (Admitter) Publisher(ctx context.Context) string { return auth.Publisher(ctx) }

// Client is the caller as the limits count it (auth.ClientID of the
// peer the face named, hub.ContextWithPeer).
func (Admitter) Client(ctx context.Context) string { return auth.ClientID(ctx, hub.Peer(ctx)) }

// MayRead reports whether the token may subscribe to every one of topics
// (auth.MaySubscribeAll).
func (Admitter) MayRead(ctx context.Context, topics []string) bool {
	return auth.MaySubscribeAll(ctx, topics)
}
