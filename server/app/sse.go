package app

import (
	"net/http"

	"github.com/ringcast/ringcast/server/hub"
	"github.com/ringcast/ringcast/server/sse"
)

// newSSEHandler serves GET /events (contract §5) on the same hub.
func newSSEHandler(h *hub.Hub, cfg Config) http.Handler {
	return sse.New(h, sse.WithLogger(cfg.Logger))
}
