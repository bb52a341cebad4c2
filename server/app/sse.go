package app

import (
	"net/http"

	"github.com/ringcast/ringcast/server/hub"
)

// newSSEHandler serves GET /events (contract §5).
func newSSEHandler(h *hub.Hub, cfg Config) http.Handler { return http.NotFoundHandler() }
