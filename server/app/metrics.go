package app

import (
	"net/http"

	"connectrpc.com/connect"

	"github.com/ringcast/ringcast/server/hub"
	rcmetrics "github.com/ringcast/ringcast/server/metrics"
)

// metrics is the Prometheus registry of a server (contract §7), one per
// server: nothing is registered globally.
type metrics struct{ m *rcmetrics.Metrics }

func newMetrics() *metrics                { return &metrics{m: rcmetrics.New()} }
func (m *metrics) observer() hub.Observer { return m.m }
func (m *metrics) watch(h *hub.Hub)       { m.m.Watch(h) }
func (m *metrics) handler() http.Handler  { return m.m.Handler() }

// rpcOption is the handler option that counts and times every RPC by code.
func (m *metrics) rpcOption() connect.HandlerOption {
	return connect.WithInterceptors(m.m.Interceptor())
}
