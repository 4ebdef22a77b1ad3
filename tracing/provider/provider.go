// Package provider builds the OpenTelemetry tracer provider of a jetflow
// process from the standard OTEL_* environment variables: the official
// Go SDK with a batching OTLP/HTTP exporter, run roots with the ids
// package tracing derives. Tracing is off unless the environment asks
// for it (Enabled).
package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jetflow/jetflow/tracing"
)

// Enabled reports whether the OTEL_* variables that getenv returns ask
// for traces, and refuses settings jetflow cannot honour:
//
//   - OTEL_SDK_DISABLED=true: off;
//   - OTEL_TRACES_EXPORTER: "none" off, "otlp" on, anything else refused;
//     unset, on when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
//     only http/protobuf (the default) is supported.
//
// getenv is os.Getenv in a command; an empty value counts as unset.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	on := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "":
	case "none":
		return false, nil
	case "otlp":
		on = true
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: jetflow exports traces with otlp (or none); unset it or set otlp", exp)
	}
	if !on {
		return false, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if proto == "" {
		proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("%s=%q: jetflow exports OTLP over http/protobuf only (a collector's OTLP/HTTP port is 4318); unset it or set http/protobuf", name, proto)
	}
	return true, nil
}

// Config names the process in its traces.
type Config struct {
	// ServiceName is the resource's service.name unless OTEL_SERVICE_NAME
	// or OTEL_RESOURCE_ATTRIBUTES set one. Default: "jetflow".
	ServiceName string
	// ServiceVersion is service.version. Default: none.
	ServiceVersion string
}

// New returns a tracer provider exporting over OTLP/HTTP in batches, as
// the OTEL_EXPORTER_OTLP_*, OTEL_BSP_*, OTEL_TRACES_SAMPLER*,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables configure it
// (the SDK reads them). Shut it down to flush what it holds.
func New(ctx context.Context, cfg Config) (*sdktrace.TracerProvider, error) {
	if cfg.ServiceName == "" {
		cfg.ServiceName = "jetflow"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.ServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	// Later detectors win: the environment overrides the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(tracing.IDGenerator{}),
	), nil
}
