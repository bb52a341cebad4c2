package edge

import (
	"context"

	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/edge/auth"
)

// Admit is the edge's hub.Admitter, the one entry point every face's
// streams are admitted through (hub.Config.Admit): the caller's token
// decides the stream's topics and its end (auth.ScopeSubscribe). Without
// auth, a stream takes the topics as asked and does not expire. A refusal
// is an *auth.Error, which answers itself on each wire: its Code on
// Connect, gRPC and gRPC-Web, its Refuse on HTTP (SSE).
func Admit(ctx context.Context, _ string, topics []string) (hub.Admission, error) {
	scope, err := auth.ScopeSubscribe(ctx, topics)
	if err != nil {
		return hub.Admission{}, err
	}
	return hub.Admission{Topics: scope.Topics, Expiry: scope.Expiry}, nil
}

var _ hub.Admitter = Admit
