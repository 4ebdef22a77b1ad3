// Package tracing holds what every jetflow process needs to put a run's
// work into one OpenTelemetry trace: the trace id and root span id a run
// derives from its name (so that any dispatcher on any machine adds to
// the same trace without storing anything), the W3C trace-context
// carrier over NATS message headers, and the span and attribute names.
// It uses the OpenTelemetry API only, so the worker SDK links it; the
// SDK and the OTLP exporter are in package provider.
package tracing
