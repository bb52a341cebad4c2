package app

import (
	"net/http"

	"github.com/ringcast/ringcast/server/hub"
)

// metrics is the Prometheus registry of a server (contract §7).
type metrics struct{}

func newMetrics() *metrics                { return &metrics{} }
func (m *metrics) observer() hub.Observer { return nil }
func (m *metrics) watch(*hub.Hub)         {}
func (m *metrics) handler() http.Handler  { return http.NotFoundHandler() }
