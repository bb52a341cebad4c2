package rpc

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceparentHeader is "traceparent" in net/http's canonical form (both its
// HTTP/1.1 and HTTP/2 servers store header names so), looked up directly so
// that the common request, without one, costs no canonicalisation.
const traceparentHeader = "Traceparent"

// traceparent is the W3C traceparent a publish keeps on its commit: the
// server span's when tracing is on (otelconnect made it a child of the
// caller's), else the caller's own `traceparent` header, if valid. Empty
// when there is neither.
func traceparent(ctx context.Context, header http.Header) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if len(header[traceparentHeader]) == 0 {
			return "" // no span, no header: nothing to parse or allocate
		}
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(header))
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}
