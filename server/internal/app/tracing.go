package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerProviderFromEnv returns an OpenTelemetry tracer provider exporting
// spans with OTLP over HTTP, configured by the standard variables, or nil
// when tracing is off. It is on when OTEL_TRACES_EXPORTER is "otlp", or
// when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; "none" turns it off. The
// exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, …) itself; OTEL_SERVICE_NAME overrides the service name
// "ringcast". Call Shutdown on the provider when the server has stopped.
func TracerProviderFromEnv(ctx context.Context, version string) (*sdktrace.TracerProvider, error) {
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil
	case "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: ringcast exports traces with otlp (over HTTP) or none", exp)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "ringcast"), attribute.String("service.version", version)),
		resource.Environment(),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}

// tracingOption is the handler option that traces every RPC with tp
// (W3C trace context in and out; a caller's trace is continued): none when
// tp is nil. It comes first, so its spans cover the other interceptors.
func tracingOption(tp trace.TracerProvider) ([]connect.HandlerOption, error) {
	if tp == nil {
		return nil, nil
	}
	ic, err := otelconnect.NewInterceptor(
		otelconnect.WithTracerProvider(tp),
		otelconnect.WithPropagator(propagation.TraceContext{}),
		otelconnect.WithTrustRemote(),
		otelconnect.WithoutMetrics(), // /metrics has the RPC metrics
	)
	if err != nil {
		return nil, err
	}
	return []connect.HandlerOption{connect.WithInterceptors(ic)}, nil
}
