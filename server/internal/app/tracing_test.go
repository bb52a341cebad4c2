package app_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
	"github.com/ringcast/ringcast/server/internal/app"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestConsumerContinuesTheProducersTrace: a producer publishes inside a
// span (otelconnect on its client sends the W3C traceparent); the server,
// tracing into an in-memory recorder, keeps its Publish span's context on
// the commit; a subscriber gets it on the fact, and the span it starts from
// it is in the producer's trace, a child of the server's Publish span. With
// tracing off on the server, the producer's own traceparent is kept.
func TestConsumerContinuesTheProducersTrace(t *testing.T) {
	for _, serverTracing := range []bool{true, false} {
		name := map[bool]string{true: "server tracing", false: "server not tracing"}[serverTracing]
		t.Run(name, func(t *testing.T) {
			serverSpans := tracetest.NewSpanRecorder()
			cfg := ringtest.Config()
			if serverTracing {
				cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(serverSpans))
			}
			srv := ringtest.Start(t, cfg)
			ctx := context.Background()

			clientSpans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(clientSpans))
			ic, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(tp), otelconnect.WithPropagator(propagation.TraceContext{}), otelconnect.WithoutMetrics())
			if err != nil {
				t.Fatal(err)
			}
			producer := ringcastv1connect.NewEventServiceClient(http.DefaultClient, srv.URL, connect.WithInterceptors(ic))
			pctx, produce := tp.Tracer("producer").Start(ctx, "produce")
			if _, err := producer.Publish(pctx, connect.NewRequest(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{{Topic: "t/a", Type: "x"}}})); err != nil {
				t.Fatal(err)
			}
			produce.End()
			traceID := produce.SpanContext().TraceID()

			c := ringcast.NewClient(srv.URL)
			defer c.CloseIdleConnections()
			var tp2 string
			for it, err := range c.Subscribe(ringcast.WithEndAtHead()).Items(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if it.Kind == ringcast.KindFact {
					tp2 = it.Traceparent
				}
			}
			cctx := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp2})
			_, consume := tp.Tracer("consumer").Start(cctx, "consume")
			consume.End()
			if got := consume.SpanContext().TraceID(); got != traceID {
				t.Fatalf("consumer trace %s (traceparent %q), want the producer's %s", got, tp2, traceID)
			}
			parent := trace.SpanContextFromContext(cctx).SpanID()
			if serverTracing {
				var publish sdktrace.ReadOnlySpan
				for _, s := range serverSpans.Ended() {
					if s.Name() == "ringcast.v1.EventService/Publish" {
						publish = s
					}
				}
				if publish == nil || publish.SpanContext().TraceID() != traceID || publish.SpanContext().SpanID() != parent {
					t.Fatalf("server Publish span %v: want it in the producer's trace and the consumer's parent %s", publish, parent)
				}
			} else {
				var rpcSpan sdktrace.ReadOnlySpan
				for _, s := range clientSpans.Ended() {
					if s.SpanKind() == trace.SpanKindClient {
						rpcSpan = s
					}
				}
				if rpcSpan == nil || rpcSpan.SpanContext().SpanID() != parent {
					t.Fatalf("consumer's parent %s, want the producer's client span %v", parent, rpcSpan)
				}
			}
		})
	}
}

// TestTracerProviderFromEnv: tracing is off unless the standard variables
// ask for it; an exporter other than otlp or none is an error.
func TestTracerProviderFromEnv(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		env     map[string]string
		on, err bool
	}{
		{env: map[string]string{}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
	} {
		for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
			t.Setenv(k, c.env[k])
		}
		tp, err := app.TracerProviderFromEnv(ctx, "test")
		if (err != nil) != c.err || (tp != nil) != c.on {
			t.Errorf("%v: provider %v, err %v; want on=%v err=%v", c.env, tp != nil, err, c.on, c.err)
		}
		if tp != nil {
			if err := tp.Shutdown(ctx); err != nil {
				t.Error(err)
			}
		}
	}
}
