package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// runIDs are the trace id of run runID of the deployment with prefix and
// the span id of its root span: the first 16 and the next 8 bytes of
// SHA-256("jetflow/" + prefix + "/" + runID). A prefix and a run id are
// NATS subject tokens, so the input has one reading. The prefix keeps two
// deployments that reuse a run id (staging and production sending to one
// collector) in two traces.
func runIDs(prefix, runID string) (trace.TraceID, trace.SpanID) {
	sum := sha256.Sum256([]byte("jetflow/" + prefix + "/" + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	// All-zero ids are invalid; SHA-256 does not give them in practice,
	// but a trace id must never be invalid.
	if !tid.IsValid() {
		tid[15] = 1
	}
	if !sid.IsValid() {
		sid[7] = 1
	}
	return tid, sid
}

// RunTraceID is the trace id of every span of a run.
func RunTraceID(prefix, runID string) trace.TraceID {
	tid, _ := runIDs(prefix, runID)
	return tid
}

// RunRoot is the span context of a run's root span (the span of the
// start that created it), as a remote parent: every later span of the
// run's dispatchers is its child.
func RunRoot(prefix, runID string) trace.SpanContext {
	tid, sid := runIDs(prefix, runID)
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

type rootKey struct{}

type root struct {
	tid trace.TraceID
	sid trace.SpanID
}

// WithRunRoot marks ctx so that the next span started on it without a
// parent by a provider using IDGenerator gets the run's trace id and root
// span id: the root span of the run.
func WithRunRoot(ctx context.Context, prefix, runID string) context.Context {
	tid, sid := runIDs(prefix, runID)
	return context.WithValue(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), rootKey{}, root{tid, sid})
}

// IDGenerator is the OpenTelemetry SDK's IDGenerator
// (go.opentelemetry.io/otel/sdk/trace.IDGenerator) that gives a run's
// root span the ids the run derives (WithRunRoot) and every other span
// random ones. A provider without it still puts every span of a run but
// the root into the run's trace.
type IDGenerator struct{}

// NewIDs returns the ids of a new root span.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if r, ok := ctx.Value(rootKey{}).(root); ok {
		return r.tid, r.sid
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

// NewSpanID returns the id of a new child span.
func (IDGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
