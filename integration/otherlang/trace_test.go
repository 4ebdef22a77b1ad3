package otherlang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/tracing/otlptest"
	"github.com/jetflow/jetflow/tracing/provider"
	"github.com/jetflow/jetflow/wire"
)

// TestOtherWorkersContinueTheTrace runs a run whose first task is served
// by the Node.js worker and whose second by `jetflow worker exec`, with a
// dispatcher and both workers tracing to a real OTLP receiver through the
// OTEL_* variables. Each worker must continue the traceparent its
// invocation carried as an exported attempt span, the child of the
// dispatcher step that invoked it, whose traceparent the result carries
// back: the Node worker with OpenTelemetry's JS SDK (a failed attempt an
// error span with its code; its batch held back until the SIGTERM drain
// flushes it), the exec worker handing its span to the program as
// TRACEPARENT.
func TestOtherWorkersContinueTheTrace(t *testing.T) {
	node := requireNode(t)
	// Generous: two runs, four processes and a build on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	root := repoRoot(t)
	bin := buildJetflow(t, ctx)
	recv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	tp, err := provider.New(ctx, provider.Config{ServiceName: "jetflow-dispatcher"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: testLogger(t)},
		Dispatcher: &dispatcher.Config{TracerProvider: tp},
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			t.Errorf("stopping the fleet: %v", err)
		}
	})
	const doc = `{"$workflow":"0.2","revision":"t1","initial":"ship","states":{
 "ship":{"work":{"task":"ship","version":"1"},"then":"echo"},
 "echo":{"work":{"task":"trace-echo","version":"1"},"then":"done"},
 "done":{"final":true}}}`
	if _, err := f.Deploy(ctx, "traced", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	// The Node worker's batch waits ten minutes: its spans can only reach
	// the receiver through the flush of its shutdown.
	nodeWorker := start(t, "node worker", filepath.Join(root, "examples", "workers", "node"),
		[]string{"JETFLOW_NATS_URL=" + f.URL(), "JETFLOW_TASKS=ship@1", "JETFLOW_PULL_EXPIRES_MS=1000", "OTEL_BSP_SCHEDULE_DELAY=600000"}, node, "worker.js")
	echo := start(t, "exec worker trace-echo", t.TempDir(), nil,
		bin, "worker", "exec", "--nats", f.URL(), "--task", "trace-echo@1", "--", "sh", "-c", `printf '{"traceparent":"%s"}' "$TRACEPARENT"`)

	const runID = "parcel-9"
	if err := f.Client.StartRun(ctx, "traced", runID, map[string]any{"order": map[string]any{"sku": "mug", "qty": 1}}); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, runID); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("%s ended %+v, %v; want done", runID, st, err)
	}
	// Without an order, tasks.js's ship fails for good with BAD_INPUT.
	const lostID = "parcel-lost"
	if err := f.Client.StartRun(ctx, "traced", lostID, map[string]any{"note": "no order"}); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, lostID); err != nil || st.Status != wire.StatusFailed {
		t.Fatalf("%s ended %+v, %v; want failed", lostID, st, err)
	}
	traceID := tracing.RunTraceID(f.Names.Prefix(), runID).String()
	rootSpan := tracing.RunRoot(f.Names.Prefix(), runID).SpanID().String()
	carried := resultTraceparents(t, ctx, f, runID)

	// Node: a child of the start (which invoked ship), sent back.
	ship := carried["/states/ship"]
	tid, sid, ok := parseTraceparent(ship)
	if !ok || tid != traceID || sid == rootSpan {
		t.Errorf("ship's result carries traceparent %q; want trace %s with a span id of its own", ship, traceID)
	}
	want := fmt.Sprintf(`"span_id":"%s","parent_span_id":"%s"`, sid, rootSpan)
	if !nodeWorker.out.contains(`"msg":"task started"`) || !nodeWorker.out.contains(want) {
		t.Errorf("the node worker's log does not show span %s as the child of the start's span %s", sid, rootSpan)
	}

	// exec: an exported attempt span, the program's TRACEPARENT, the
	// result's traceparent: one span.
	var attempt, parent otlptest.Span
	natstest.WaitFor(t, 30*time.Second, "the exec worker's attempt span and its parent reach the receiver", func() error {
		spans := recv.Of(runID)
		for _, s := range spans {
			if s.Name == tracing.SpanAttempt && s.Attrs["jetflow.task"] == "trace-echo" {
				attempt = s
			}
		}
		for _, s := range spans {
			if attempt.ParentID != "" && s.SpanID == attempt.ParentID {
				parent = s
				return nil
			}
		}
		return fmt.Errorf("attempt %+v, no parent yet among %d spans", attempt, len(spans))
	})
	if attempt.TraceID != traceID || attempt.Service != "jetflow-worker-exec" {
		t.Errorf("exec attempt span %+v; want trace %s from service jetflow-worker-exec", attempt, traceID)
	}
	if parent.Name != tracing.SpanApply || parent.Attrs["jetflow.input.kind"] != "result" {
		t.Errorf("the exec attempt's parent %+v is not the dispatcher step of ship's result", parent)
	}
	wantTP := fmt.Sprintf("00-%s-%s-01", traceID, attempt.SpanID)
	if got := carried["/states/echo"]; got != wantTP {
		t.Errorf("trace-echo's result carries traceparent %q, want the attempt's %q", got, wantTP)
	}
	if got := results(t, ctx, f, runID)["/states/echo"]["traceparent"]; got != wantTP {
		t.Errorf("the program got TRACEPARENT %q, want the attempt's %q", got, wantTP)
	}
	for _, p := range []*process{nodeWorker, echo} {
		if err := p.stop(t, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit status 0", p.name, err)
		}
	}

	// Node, after its drain: the attempt span its result named, the child
	// of the start, with the Go SDK's attributes.
	nodeAttempt := func(run string) (otlptest.Span, error) {
		for _, s := range recv.Of(run) {
			if s.Name == tracing.SpanAttempt && s.Attrs["jetflow.task"] == "ship" {
				return s, nil
			}
		}
		return otlptest.Span{}, fmt.Errorf("no attempt span of ship in %s yet", run)
	}
	var shipSpan, lostSpan otlptest.Span
	natstest.WaitFor(t, 30*time.Second, "the node worker's attempt spans reach the receiver", func() (err error) {
		if shipSpan, err = nodeAttempt(runID); err != nil {
			return err
		}
		lostSpan, err = nodeAttempt(lostID)
		return err
	})
	wantAttrs := map[string]string{
		"jetflow.run_id": runID, "jetflow.task": "ship", "jetflow.task.version": "1", "jetflow.attempt": "1",
		"jetflow.input.delivery": "1", "jetflow.state": "/states/ship",
	}
	if shipSpan.TraceID != traceID || shipSpan.SpanID != sid || shipSpan.ParentID != rootSpan ||
		shipSpan.Service != "jetflow-worker-node" || shipSpan.Kind != tracepb.Span_SPAN_KIND_CONSUMER || shipSpan.Error {
		t.Errorf("node attempt span %+v; want span %s of trace %s, child of the start %s, from service jetflow-worker-node, a consumer, no error",
			shipSpan, sid, traceID, rootSpan)
	}
	for k, v := range wantAttrs {
		if got := shipSpan.Attrs[k]; got != v {
			t.Errorf("node attempt span: %s = %q, want %q", k, got, v)
		}
	}
	lostTrace := tracing.RunTraceID(f.Names.Prefix(), lostID).String()
	lostRoot := tracing.RunRoot(f.Names.Prefix(), lostID).SpanID().String()
	if lostSpan.TraceID != lostTrace || lostSpan.ParentID != lostRoot || !lostSpan.Error ||
		lostSpan.Attrs["jetflow.error.code"] != "BAD_INPUT" || lostSpan.Attrs["jetflow.non_retryable"] != "true" {
		t.Errorf("node attempt span of %s %+v; want an error with jetflow.error.code BAD_INPUT, non-retryable, the child of %s in trace %s",
			lostID, lostSpan, lostRoot, lostTrace)
	}
	if got, want := resultTraceparents(t, ctx, f, lostID)["/states/ship"], fmt.Sprintf("00-%s-%s-01", lostTrace, lostSpan.SpanID); got != want {
		t.Errorf("%s: ship's result carries traceparent %q, want its attempt span's %q", lostID, got, want)
	}
}

// resultTraceparents reads a run's result messages from the input stream
// and returns the traceparent header of each, by the state its
// activation names.
func resultTraceparents(t *testing.T, ctx context.Context, f *fleet.Fleet, runID string) map[string]string {
	t.Helper()
	c, err := f.JS.OrderedConsumer(ctx, f.Names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{f.Names.Prefix() + ".in." + runID + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for m := range batch.Messages() {
		// Results only: a partitioned stream stores them under the
		// run's partition, so the filter takes the run's every input.
		if _, kind, _, err := f.Names.ParseInput(m.Subject()); err != nil || kind != subjects.KindResult {
			continue
		}
		var res wire.Result
		if err := json.Unmarshal(m.Data(), &res); err != nil {
			t.Fatal(err)
		}
		var act []any
		if err := json.Unmarshal([]byte(res.Activation), &act); err != nil || len(act) < 2 {
			t.Fatalf("activation %q: %v", res.Activation, err)
		}
		out[fmt.Sprint(act[1])] = m.Headers().Get(tracing.HeaderTraceparent)
	}
	return out
}

// parseTraceparent splits a version-00 traceparent into its trace and
// span ids.
func parseTraceparent(v string) (traceID, spanID string, ok bool) {
	parts := strings.Split(v, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// TestNodeTracingTurnsOnAsGoDoes asks the Node worker's tracing.js and
// tracing/provider.Enabled about the same OTEL_* settings: both must turn
// tracing on and off alike, and refuse the same settings.
func TestNodeTracingTurnsOnAsGoDoes(t *testing.T) {
	node := requireNode(t)
	dir := filepath.Join(repoRoot(t), "examples", "workers", "node")
	var inherited []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			inherited = append(inherited, kv)
		}
	}
	cases := []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"},
		{"OTEL_TRACES_EXPORTER": "otlp"},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
		{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"},
		{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
	}
	for _, env := range cases {
		on, goErr := provider.Enabled(func(k string) string { return env[k] })
		want := fmt.Sprint(on)
		if goErr != nil {
			want = goErr.Error()
		}
		cmd := exec.Command(node, "tracing.js")
		cmd.Dir = dir
		cmd.Env = slices.Clone(inherited)
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		got := strings.TrimSpace(stdout.String())
		if err != nil {
			got = strings.TrimSpace(stderr.String())
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("%v: node tracing.js: %v, want exit status 0 or 2\n%s", env, err, stderr.String())
				continue
			}
		}
		if got != want {
			t.Errorf("%v: the Node worker says %q, the Go side %q", env, got, want)
		}
	}
}
