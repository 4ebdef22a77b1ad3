package tracing

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// Header names of the W3C trace context jetflow messages carry
// (https://www.w3.org/TR/trace-context/): task invocations carry the span
// of the step that invoked them, results the worker's attempt span.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// propagator is W3C trace context, and nothing else: jetflow's messages
// carry no baggage.
var propagator = propagation.TraceContext{}

// Carrier adapts NATS headers to OpenTelemetry's TextMapCarrier. NATS
// header names are case-sensitive; the W3C names are lower case.
type Carrier nats.Header

// Get returns the first value of key.
func (c Carrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set replaces key's values by value.
func (c Carrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header names.
func (c Carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes the span context of ctx into h (nothing when ctx holds
// no valid span context). h must not be nil.
func Inject(ctx context.Context, h nats.Header) {
	propagator.Inject(ctx, Carrier(h))
}

// Extract returns ctx with the remote span context h carries, if any.
func Extract(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return propagator.Extract(ctx, Carrier(h))
}

// Traceparent returns the traceparent header value of ctx's span, "" when
// ctx holds no valid span context. Programs a worker starts get it as the
// TRACEPARENT environment variable, as OpenTelemetry's environment
// carrier specifies.
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[HeaderTraceparent]
}
