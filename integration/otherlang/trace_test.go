package otherlang

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
// dispatcher tracing to a real OTLP receiver. Each worker must continue
// the traceparent its invocation carried: the Node worker (which exports
// no spans) as a child span id that its result's traceparent carries
// back; the exec worker as an exported attempt span, the child of the
// dispatcher step that invoked it, handed to the program as TRACEPARENT
// and carried back on the result.
func TestOtherWorkersContinueTheTrace(t *testing.T) {
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	nodeWorker := start(t, "node worker", filepath.Join(root, "examples", "workers", "node"),
		[]string{"JETFLOW_NATS_URL=" + f.URL(), "JETFLOW_TASKS=ship@1", "JETFLOW_PULL_EXPIRES_MS=1000"}, node, "worker.js")
	echo := start(t, "exec worker trace-echo", t.TempDir(), nil,
		bin, "worker", "exec", "--nats", f.URL(), "--task", "trace-echo@1", "--", "sh", "-c", `printf '{"traceparent":"%s"}' "$TRACEPARENT"`)

	const runID = "parcel-9"
	if err := f.Client.StartRun(ctx, "traced", runID, map[string]any{"order": map[string]any{"sku": "mug", "qty": 1}}); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, runID); err != nil || st.Status != wire.StatusDone {
		t.Fatalf("%s ended %+v, %v; want done", runID, st, err)
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
