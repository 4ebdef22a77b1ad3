package worker

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/wire"
)

// startAttempt starts the span of one task attempt, the child of the
// span the invocation's traceparent header names (the dispatcher step
// that invoked it). Without tracing it returns ctx and nil.
func (w *Worker) startAttempt(ctx context.Context, m jetstream.Msg, wi *wire.Invocation, delivery uint64) (context.Context, trace.Span) {
	if w.tracer == nil {
		return ctx, nil
	}
	ctx = tracing.Extract(ctx, m.Headers())
	return w.tracer.Start(ctx, tracing.SpanAttempt,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			tracing.KeyRunID.String(wi.Run),
			tracing.KeyTask.String(wi.Task),
			tracing.KeyVersion.String(wi.Version),
			tracing.KeyActivation.String(wi.Activation),
			tracing.KeyNode.String(wi.Node),
			tracing.KeyAttempt.Int(wi.Attempt),
			tracing.KeyDelivery.Int64(int64(delivery)),
			attribute.String("jetflow.state", wi.State),
		))
}

// endAttempt closes an attempt's span with how it went: a handler error
// marks it failed, with the code the dispatchers see; handedBack says the
// attempt was given back to another worker.
func endAttempt(span trace.Span, herr error, handedBack string) {
	if span == nil {
		return
	}
	if herr != nil {
		te := WireError(herr)
		if te.Code != "" {
			span.SetAttributes(tracing.KeyErrorCode.String(te.Code))
		}
		span.SetAttributes(attribute.Bool("jetflow.non_retryable", te.NonRetryable))
		var pe *PanicError
		if errors.As(herr, &pe) {
			span.SetAttributes(attribute.Bool("jetflow.panic", true))
		}
		span.RecordError(herr)
		span.SetStatus(codes.Error, te.Message)
	}
	if handedBack != "" {
		span.AddEvent("jetflow.handed_back", trace.WithAttributes(tracing.KeyReason.String(handedBack)))
	}
	span.End()
}
