package dispatcher

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/tracing"
)

// traceHooks runs every tracing hook a step of an input passes through,
// as attempt and handle call them.
func traceHooks(d *Dispatcher, in *step.Input, h nats.Header, res step.Result) {
	ctx := d.withDelivery(context.Background(), 1, h)
	tr := d.beginTrace(in, 7)
	tr.loaded(cached{}, false)
	ctx = tr.open(ctx, res, false)
	tr.saved(true, nil)
	tr.end(ctx, outcomeApplied, nil)
}

func hookInput(t testing.TB) *step.Input {
	t.Helper()
	names := subjects.Must("")
	in, err := step.Parse(step.Settings{Names: names, MaxInputBytes: 1 << 20}, names.Event("r-1", "payment"), nil, []byte(`{"amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestTracingOffAllocatesNothing: with no TracerProvider the hooks on
// the hot path allocate nothing (the cost of tracing off is a nil check).
func TestTracingOffAllocatesNothing(t *testing.T) {
	d := &Dispatcher{cfg: Config{Names: subjects.Must("")}}
	in := hookInput(t)
	h := nats.Header{tracing.HeaderTraceparent: {"00-" + tracing.RunTraceID("jetflow", "r-1").String() + "-" + tracing.RunRoot("jetflow", "r-1").SpanID().String() + "-01"}}
	if n := testing.AllocsPerRun(100, func() { traceHooks(d, in, h, step.Result{}) }); n != 0 {
		t.Errorf("tracing off: %v allocations per input, want 0", n)
	}
	m := nats.NewMsg("x")
	p := publisher{}
	if n := testing.AllocsPerRun(100, func() {
		if p.traced {
			tracing.Inject(context.Background(), m.Header)
		}
	}); n != 0 || len(m.Header) != 0 {
		t.Errorf("tracing off: the publisher allocated %v times and set %v", n, m.Header)
	}
}

// BenchmarkTraceHooks measures what tracing adds to one input's step:
// nothing when off; a span and its attributes when on (recorded by the
// SDK, exported nowhere).
func BenchmarkTraceHooks(b *testing.B) {
	in := hookInput(b)
	rec := &runrecord.Record{}
	res := step.Result{Outcome: step.Applied, Run: step.Run{Record: rec}}
	b.Run("off", func(b *testing.B) {
		d := &Dispatcher{cfg: Config{Names: subjects.Must("")}}
		b.ReportAllocs()
		for b.Loop() {
			traceHooks(d, in, nil, res)
		}
	})
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(tracing.IDGenerator{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		d := &Dispatcher{cfg: Config{Names: subjects.Must("")}, tracer: tp.Tracer(tracing.ScopeName)}
		b.ReportAllocs()
		for b.Loop() {
			traceHooks(d, in, nil, res)
		}
	})
}
