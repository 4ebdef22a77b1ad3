package tracing_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/tracing"
)

// TestRunIDsAreTheDocumentedHash: the ids are SHA-256("jetflow/P/R"),
// first 16 bytes the trace, next 8 the root span, as
// docs/OBSERVABILITY.md says, so anyone can compute a run's trace id.
func TestRunIDsAreTheDocumentedHash(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("jetflow/jetflow/order-1"))
	if got, want := tracing.RunTraceID("jetflow", "order-1").String(), hex.EncodeToString(sum[:16]); got != want {
		t.Errorf("trace id %s, want %s", got, want)
	}
	root := tracing.RunRoot("jetflow", "order-1")
	if got, want := root.SpanID().String(), hex.EncodeToString(sum[16:24]); got != want {
		t.Errorf("root span id %s, want %s", got, want)
	}
	if !root.IsRemote() || !root.IsSampled() || root.TraceID() != tracing.RunTraceID("jetflow", "order-1") {
		t.Errorf("root span context %+v: want remote, sampled, in the run's trace", root)
	}
	if tracing.RunTraceID("staging", "order-1") == tracing.RunTraceID("jetflow", "order-1") {
		t.Error("two deployments' runs of the same id share a trace")
	}
}

// TestIDGeneratorGivesTheRootItsIDs: a span started on WithRunRoot's
// context gets the run's ids, any other a random pair.
func TestIDGeneratorGivesTheRootItsIDs(t *testing.T) {
	t.Parallel()
	var g tracing.IDGenerator
	parent := trace.ContextWithSpanContext(context.Background(), tracing.RunRoot("p", "other"))
	tid, sid := g.NewIDs(tracing.WithRunRoot(parent, "p", "r"))
	if tid != tracing.RunTraceID("p", "r") || sid != tracing.RunRoot("p", "r").SpanID() {
		t.Errorf("root ids %s %s, want the run's", tid, sid)
	}
	if sc := trace.SpanContextFromContext(tracing.WithRunRoot(parent, "p", "r")); sc.IsValid() {
		t.Errorf("WithRunRoot kept the parent %v: the root must have none", sc)
	}
	tid2, sid2 := g.NewIDs(context.Background())
	if !tid2.IsValid() || !sid2.IsValid() || tid2 == tid {
		t.Errorf("random ids %s %s", tid2, sid2)
	}
	if s := g.NewSpanID(context.Background(), tid); !s.IsValid() || s == sid {
		t.Errorf("child span id %s", s)
	}
}

// TestCarrierRoundTrip: what Inject writes on NATS headers, Extract reads
// back as a remote parent; headers without it leave the context alone.
func TestCarrierRoundTrip(t *testing.T) {
	t.Parallel()
	sc := tracing.RunRoot("jetflow", "r-1")
	h := nats.Header{}
	tracing.Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := h.Get(tracing.HeaderTraceparent); got != want {
		t.Fatalf("traceparent %q, want %q", got, want)
	}
	if got := tracing.Traceparent(trace.ContextWithSpanContext(context.Background(), sc)); got != want {
		t.Errorf("Traceparent %q, want %q", got, want)
	}
	back := trace.SpanContextFromContext(tracing.Extract(context.Background(), h))
	if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || !back.IsRemote() {
		t.Errorf("extracted %+v, want %+v", back, sc)
	}
	for _, bad := range []nats.Header{nil, {}, {"traceparent": {"00-zz-yy-01"}}, {"traceparent": {"00-00000000000000000000000000000000-0000000000000000-01"}}} {
		if got := trace.SpanContextFromContext(tracing.Extract(context.Background(), bad)); got.IsValid() {
			t.Errorf("headers %v gave span context %+v, want none", bad, got)
		}
	}
	empty := nats.Header{}
	tracing.Inject(context.Background(), empty)
	if len(empty) != 0 {
		t.Errorf("Inject without a span wrote %v", empty)
	}
}

// FuzzExtract: any header value parses without panicking, and a span
// context it yields is valid.
func FuzzExtract(f *testing.F) {
	f.Add("00-" + tracing.RunTraceID("p", "r").String() + "-" + tracing.RunRoot("p", "r").SpanID().String() + "-01")
	f.Add("00-zz-yy-01")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), nats.Header{"traceparent": {v}}))
		if sc.IsValid() && (!sc.TraceID().IsValid() || !sc.SpanID().IsValid()) {
			t.Errorf("%q gave %+v", v, sc)
		}
	})
}
