package traces

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/tracing/otlptest"
	"github.com/jetflow/jetflow/tracing/provider"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// repoFile reads a file given relative to the repository root (two
// levels above this file).
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// quiet drops the logs: the tests assert on spans.
var quiet = slog.New(slog.DiscardHandler)

// bundle is one test's deployment: an embedded server, a dispatcher and
// a Go worker, all tracing to the receiver through the standard OTEL_*
// variables.
type bundle struct {
	ctx  context.Context
	f    *fleet.Fleet
	recv *otlptest.Receiver
	tp   *sdktrace.TracerProvider
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	recv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	on, err := provider.Enabled(os.Getenv)
	if err != nil || !on {
		t.Fatalf("provider.Enabled with OTEL_EXPORTER_OTLP_ENDPOINT set: %v, %v; want true", on, err)
	}
	tp, err := provider.New(ctx, provider.Config{ServiceName: "jetflow-dispatcher"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	retry := func(string, string) run.RetryPolicy {
		return run.RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 20, MaxIntervalMs: 50, Multiplier: 2}
	}
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), ReadyTimeout: natstest.StartTimeout, Logger: quiet},
		Dispatcher: &dispatcher.Config{TracerProvider: tp, RunOptions: run.Options{Retry: retry}},
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	order := repoFile(t, "examples/order.json")
	if _, err := f.Deploy(ctx, "order", order); err != nil {
		t.Fatal(err)
	}
	// The same document with a short payment window, to see a timer fire.
	short := strings.Replace(strings.Replace(string(order), `"ms": 60000`, `"ms": 200`, 1), `"order-1"`, `"order-short"`, 1)
	if _, err := f.Deploy(ctx, "order-short", []byte(short)); err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, f: f, recv: recv, tp: tp}
}

// startWorker serves the order workflow's five tasks with the Go SDK, on
// its own connection and with its own tracer provider, as a worker
// process would. ship fails its first attempt with a retryable error,
// and fails for good for customer zoe until a redrive.
func (b *bundle) startWorker(t *testing.T) {
	t.Helper()
	nc, err := nats.Connect(b.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := provider.New(b.ctx, provider.Config{ServiceName: "jetflow-worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	w, err := worker.New(js, worker.Config{Names: b.f.Names, PollWait: 200 * time.Millisecond, TracerProvider: tp, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	type order struct {
		Order struct {
			Customer string `json:"customer"`
		} `json:"order"`
	}
	tasks := map[string]worker.Handler{
		"check-stock": func(context.Context, worker.Invocation) (any, error) { return map[string]any{"available": true}, nil },
		"quote-price": func(context.Context, worker.Invocation) (any, error) { return map[string]any{"total": 10}, nil },
		"score-fraud": func(context.Context, worker.Invocation) (any, error) { return map[string]any{"score": 0.1}, nil },
		"ship": func(_ context.Context, inv worker.Invocation) (any, error) {
			var o order
			_ = inv.DecodeWith(&o)
			if o.Order.Customer == "zoe" && inv.Attempt == 1 {
				return nil, worker.WithCode("ADDRESS_UNVERIFIED", worker.NonRetryable(errors.New("address not verified")))
			}
			if inv.Attempt == 1 {
				return nil, worker.WithCode("CARRIER_TIMEOUT", errors.New("carrier API timed out"))
			}
			return map[string]any{"tracking": "T-1"}, nil
		},
		"notify": func(context.Context, worker.Invocation) (any, error) { return map[string]any{"notified": true}, nil },
	}
	for name, h := range tasks {
		if err := w.Register(name, "1", h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
		_ = tp.ForceFlush(ctx)
	})
}

// spansOf waits until the receiver holds at least n spans of runID and
// no more arrive for a flush, and returns them.
func (b *bundle) spansOf(t *testing.T, runID string, want func([]otlptest.Span) error) []otlptest.Span {
	t.Helper()
	var got []otlptest.Span
	natstest.WaitFor(t, 30*time.Second, "the spans of "+runID+" reach the receiver", func() error {
		got = b.recv.Of(runID)
		return want(got)
	})
	return got
}

func count(spans []otlptest.Span, name string, attrs map[string]string) int {
	n := 0
	for _, s := range spans {
		if s.Name == name && matches(s, attrs) {
			n++
		}
	}
	return n
}

func matches(s otlptest.Span, attrs map[string]string) bool {
	for k, v := range attrs {
		if s.Attrs[k] != v {
			return false
		}
	}
	return true
}

func find(spans []otlptest.Span, name string, attrs map[string]string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if s.Name == name && matches(s, attrs) {
			out = append(out, s)
		}
	}
	return out
}

// TestOrderRunIsOneTrace runs a paid order through examples/order.json
// with Go SDK workers and checks the span tree the receiver got: one
// trace whose id the run id gives, the start as its root, every applied
// input a child of the root, every task attempt a child of the step that
// invoked it, ship's failed first attempt and its retry as two attempt
// spans, the payment event and the results as what their apply spans
// show, and each result's apply span linked to the attempt it answers.
func TestOrderRunIsOneTrace(t *testing.T) {
	b := setup(t)
	b.startWorker(t)
	const runID = "order-traced"
	if err := b.f.Client.StartRun(b.ctx, "order", runID, map[string]any{"sku": "KB-42", "qty": 1, "customer": "ada"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, runID+" waits for its payment", func() error {
		st, err := b.f.Client.Status(b.ctx, runID)
		if err != nil || st.Status != wire.StatusWaiting {
			return fmt.Errorf("status %+v: %w", st, err)
		}
		return nil
	})
	if err := b.f.Client.SendEvent(b.ctx, runID, "payment", map[string]any{"amount": 10}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.f.Client.Wait(b.ctx, runID); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("%s ended %+v, %v; want done", runID, st, err)
	}

	// 1 start, 3 check results, 1 event, 2 ship results, 1 notify result
	// at least (a retry may add a timer input); 3 + 2 + 1 attempts.
	spans := b.spansOf(t, runID, func(s []otlptest.Span) error {
		if count(s, tracing.SpanAttempt, nil) < 6 || count(s, tracing.SpanApply, map[string]string{"jetflow.input.kind": "result"}) < 6 {
			return fmt.Errorf("%d spans so far", len(s))
		}
		return nil
	})
	traceID := tracing.RunTraceID(b.f.Names.Prefix(), runID).String()
	root := tracing.RunRoot(b.f.Names.Prefix(), runID).SpanID().String()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.TraceID != traceID {
			t.Errorf("span %s %s is in trace %s, want the run's trace %s", s.Name, s.SpanID, s.TraceID, traceID)
		}
		if _, dup := byID[s.SpanID]; dup {
			t.Errorf("span id %s twice", s.SpanID)
		}
		byID[s.SpanID] = s
	}

	// The root: the start that created the run.
	starts := find(spans, tracing.SpanStart, nil)
	if len(starts) != 1 || starts[0].SpanID != root || starts[0].ParentID != "" {
		t.Fatalf("start spans %+v; want one root span with id %s", starts, root)
	}
	if s := starts[0]; s.Attrs["jetflow.cas"] != "created" || s.Attrs["jetflow.outcome"] != "applied" || s.Attrs["jetflow.status.after"] != "running" ||
		s.Attrs["jetflow.workflow"] != "order" || s.Service != "jetflow-dispatcher" {
		t.Errorf("root span: %+v", s)
	}
	// Every other dispatcher span is a child of the root.
	applies := find(spans, tracing.SpanApply, nil)
	for _, s := range applies {
		if s.ParentID != root {
			t.Errorf("apply span of %s (seq %s) has parent %s, want the root %s", s.Attrs["jetflow.input.kind"], s.Attrs["jetflow.input.seq"], s.ParentID, root)
		}
		if s.Attrs["jetflow.cas"] != "updated" || s.Attrs["jetflow.outcome"] != "applied" {
			t.Errorf("apply span of %s (seq %s): cas %q outcome %q, want updated and applied", s.Attrs["jetflow.input.kind"], s.Attrs["jetflow.input.seq"], s.Attrs["jetflow.cas"], s.Attrs["jetflow.outcome"])
		}
	}
	// The payment: an event span, waiting before, running after.
	events := find(applies, tracing.SpanApply, map[string]string{"jetflow.input.kind": "event"})
	if len(events) != 1 || !slices.Contains(events[0].Events, tracing.EventEvent) ||
		events[0].Attrs["jetflow.status.before"] != "waiting" || events[0].Attrs["jetflow.state.before"] != "/states/await-payment" {
		t.Errorf("event apply spans: %+v", events)
	}
	last := applies[0]
	for _, s := range applies {
		if s.Attrs["jetflow.status.after"] == "done" {
			last = s
		}
	}
	if last.Attrs["jetflow.status.after"] != "done" {
		t.Errorf("no apply span ends the run done: %+v", applies)
	}

	// Attempts: children of the step that invoked them, on the worker.
	attempts := find(spans, tracing.SpanAttempt, nil)
	for _, a := range attempts {
		parent, ok := byID[a.ParentID]
		if !ok || (parent.Name != tracing.SpanStart && parent.Name != tracing.SpanApply) {
			t.Errorf("attempt of %s #%s has parent %s (%+v), want a dispatcher span of the run", a.Attrs["jetflow.task"], a.Attrs["jetflow.attempt"], a.ParentID, parent)
		}
		if a.Service != "jetflow-worker" {
			t.Errorf("attempt of %s: service %q, want jetflow-worker", a.Attrs["jetflow.task"], a.Service)
		}
	}
	for _, task := range []string{"check-stock", "quote-price", "score-fraud"} {
		as := find(attempts, tracing.SpanAttempt, map[string]string{"jetflow.task": task})
		if len(as) != 1 || as[0].ParentID != root {
			t.Errorf("attempts of %s: %+v; want one, invoked by the start", task, as)
		}
	}
	first := find(attempts, tracing.SpanAttempt, map[string]string{"jetflow.task": "ship", "jetflow.attempt": "1"})
	second := find(attempts, tracing.SpanAttempt, map[string]string{"jetflow.task": "ship", "jetflow.attempt": "2"})
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("ship attempts: first %+v, second %+v; want one each", first, second)
	}
	if !first[0].Error || first[0].Attrs["jetflow.error.code"] != "CARRIER_TIMEOUT" || second[0].Error {
		t.Errorf("ship attempt 1 %+v should be an error with CARRIER_TIMEOUT, attempt 2 %+v not", first[0], second[0])
	}
	if byID[first[0].ParentID].Attrs["jetflow.input.kind"] != "event" {
		t.Errorf("ship's first attempt was invoked by %+v, want the payment's step", byID[first[0].ParentID])
	}
	if first[0].ParentID == second[0].ParentID {
		t.Errorf("both ship attempts have parent %s: the retry must come from a later step", first[0].ParentID)
	}

	// Results: each result's apply span links to the attempt it answers.
	results := find(applies, tracing.SpanApply, map[string]string{"jetflow.input.kind": "result"})
	linked := map[string]bool{}
	for _, r := range results {
		if !slices.Contains(r.Events, tracing.EventResult) {
			t.Errorf("result apply span %s has no %s event: %v", r.SpanID, tracing.EventResult, r.Events)
		}
		for _, l := range r.Links {
			linked[l] = true
		}
	}
	for _, a := range attempts {
		if !linked[a.SpanID] {
			t.Errorf("no result apply span links to the attempt of %s #%s", a.Attrs["jetflow.task"], a.Attrs["jetflow.attempt"])
		}
	}
}

// TestTimerAndRedriveInTheTrace: a fired timer is an event of the timer
// input's apply span, and a redrive is a span of its own with its reason,
// in the trace of the run it continues.
func TestTimerAndRedriveInTheTrace(t *testing.T) {
	b := setup(t)
	b.startWorker(t)
	if err := b.f.Client.StartRun(b.ctx, "order-short", "unpaid", map[string]any{"sku": "KB-42", "qty": 1, "customer": "ada"}); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Client.StartRun(b.ctx, "order", "zoe-1", map[string]any{"sku": "KB-42", "qty": 1, "customer": "zoe"}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.f.Client.Wait(b.ctx, "unpaid"); err != nil || st.State != "/states/expired" {
		t.Fatalf("unpaid ended %+v, %v; want done in expired", st, err)
	}
	natstest.WaitFor(t, 30*time.Second, "zoe-1 waits for its payment", func() error {
		st, err := b.f.Client.Status(b.ctx, "zoe-1")
		if err != nil || st.Status != wire.StatusWaiting {
			return fmt.Errorf("status %+v: %w", st, err)
		}
		return nil
	})
	if err := b.f.Client.SendEvent(b.ctx, "zoe-1", "payment", map[string]any{"amount": 10}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.f.Client.Wait(b.ctx, "zoe-1"); err != nil || st.Status != wire.StatusFailed {
		t.Fatalf("zoe-1 ended %+v, %v; want failed", st, err)
	}
	seq, err := b.f.Client.Redrive(b.ctx, "zoe-1", "address verified")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.Client.Redriven(b.ctx, "zoe-1", seq); err != nil {
		t.Fatal(err)
	}
	if st, err := b.f.Client.Wait(b.ctx, "zoe-1"); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("zoe-1 after its redrive: %+v, %v; want done", st, err)
	}

	timers := b.spansOf(t, "unpaid", func(s []otlptest.Span) error {
		if count(s, tracing.SpanApply, map[string]string{"jetflow.input.kind": "timer"}) == 0 {
			return errors.New("no timer apply span yet")
		}
		return nil
	})
	for _, s := range find(timers, tracing.SpanApply, map[string]string{"jetflow.input.kind": "timer"}) {
		if !slices.Contains(s.Events, tracing.EventTimerFired) {
			t.Errorf("timer apply span without a %s event: %+v", tracing.EventTimerFired, s)
		}
	}
	zoe := b.spansOf(t, "zoe-1", func(s []otlptest.Span) error {
		if count(s, tracing.SpanRedrive, nil) == 0 || count(s, tracing.SpanAttempt, map[string]string{"jetflow.task": "notify"}) == 0 {
			return errors.New("no redrive span or notify attempt yet")
		}
		return nil
	})
	redrives := find(zoe, tracing.SpanRedrive, nil)
	root := tracing.RunRoot(b.f.Names.Prefix(), "zoe-1").SpanID().String()
	if len(redrives) != 1 || redrives[0].Attrs["jetflow.reason"] != "address verified" || redrives[0].ParentID != root ||
		redrives[0].Attrs["jetflow.status.before"] != "failed" || redrives[0].Attrs["jetflow.status.after"] != "running" {
		t.Errorf("redrive spans %+v; want one, child of the root, with its reason, failed before and running after", redrives)
	}
	// The redriven attempt of ship is the redrive's child.
	var again []otlptest.Span
	for _, a := range find(zoe, tracing.SpanAttempt, map[string]string{"jetflow.task": "ship"}) {
		if a.ParentID == redrives[0].SpanID {
			again = append(again, a)
		}
	}
	if len(again) != 1 || again[0].Error {
		t.Errorf("ship attempts invoked by the redrive: %+v; want one that succeeded", again)
	}
}
