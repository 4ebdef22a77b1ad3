package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/tracing/provider"
)

// tracingFlushTimeout bounds the flush of buffered spans at exit.
const tracingFlushTimeout = 5 * time.Second

// startTracing builds the tracer provider the standard OTEL_* variables
// ask for (provider.Enabled gives the rules; docs/OBSERVABILITY.md), with
// service as the default service.name. With tracing off it returns a nil
// provider, which the dispatcher and the worker take as "no tracing".
// stop flushes the spans still buffered; call it after the service
// stopped.
func startTracing(ctx context.Context, service string, log *slog.Logger) (tp trace.TracerProvider, stop func(context.Context), err error) {
	on, err := provider.Enabled(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	if !on {
		return nil, func(context.Context) {}, nil
	}
	p, err := provider.New(ctx, provider.Config{ServiceName: service, ServiceVersion: readBuildVersion().Version})
	if err != nil {
		return nil, nil, fmt.Errorf("%w (check the OTEL_EXPORTER_OTLP_* variables)", err)
	}
	log.Info("tracing: exporting spans over OTLP/HTTP", slog.String("service", service))
	return p, func(ctx context.Context) {
		// An unreachable collector must not hold up the exit for long.
		ctx, cancel := context.WithTimeout(ctx, tracingFlushTimeout)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			log.Warn("tracing: flushing spans at shutdown failed", slog.Any("error", err))
		}
	}, nil
}
