package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// serveTask answers invocations of task@version with fn's output, through
// the worker SDK, until the test ends.
func (b *bundle) serveTask(t *testing.T, task, version string, fn worker.Handler) {
	t.Helper()
	w, err := worker.New(b.js, worker.Config{
		Names: b.names, CreateConsumers: true, PollWait: 200 * time.Millisecond, Logger: quietLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register(task, version, fn); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("worker stop: %v", err)
		}
	})
}

// simpleWorker answers invocations of task@version with a plain consumer
// (no SDK): the output is {"echo": input, "attempt": n}.
func (b *bundle) simpleWorker(t *testing.T, task, version string) {
	t.Helper()
	ctx := testCtx(t)
	c, err := provision.EnsureTaskConsumer(ctx, b.js, b.names, task, version, provision.TaskPolicy{StartToClose: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var inv wire.Invocation
		if err := json.Unmarshal(m.Data(), &inv); err != nil {
			_ = m.Term()
			return
		}
		out, _ := json.Marshal(map[string]any{"echo": inv.Input, "attempt": inv.Attempt})
		res, _ := json.Marshal(wire.Result{Activation: inv.Activation, Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Output: out})
		msg := nats.NewMsg(inv.Reply)
		msg.Data = res
		msg.Header.Set(wire.HeaderMsgID, worker.ResultMsgID(inv.Token))
		if _, err := b.js.PublishMsg(context.Background(), msg); err != nil {
			_ = m.Nak()
			return
		}
		_ = m.Ack()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Stop(); <-cc.Closed() })
}

func echoUpper(_ context.Context, inv worker.Invocation) (any, error) {
	var in any
	if err := inv.DecodeInput(&in); err != nil {
		return nil, err
	}
	return map[string]any{"echo": in, "attempt": inv.Attempt}, nil
}

func TestOneTaskRunEndsDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := prometheus.NewRegistry()
	d := b.dispatcher(t, Config{Registerer: reg})
	b.serveTask(t, "echo", "1.0", echoUpper)

	b.start(t, "r1", map[string]any{"task": "echo", "version": "1.0", "payload": map[string]any{"x": 1}})
	rec := b.waitStatus(t, "r1", wire.StatusDone, 10*time.Second)
	if got, want := string(rec.Status.Result), `{"attempt":1,"echo":{"x":1}}`; got != want {
		t.Errorf("result = %s, want %s", got, want)
	}
	if rec.Status.Workflow != "fake" || rec.Status.Revision != "r1" {
		t.Errorf("status names %s@%s, want fake@r1", rec.Status.Workflow, rec.Status.Revision)
	}
	b.consumerSettled(t, 5*time.Second)
	if n := b.stored(t, b.names.TaskStream()); n != 1 {
		t.Errorf("%d invocations stored, want 1", n)
	}
	if got := testutil.ToFloat64(d.m.started); got != 1 {
		t.Errorf("runs started = %v, want 1", got)
	}
	if got := testutil.ToFloat64(d.m.settled.WithLabelValues("done")); got != 1 {
		t.Errorf("runs settled done = %v, want 1", got)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("result", outcomeApplied)); got != 1 {
		t.Errorf("results applied = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Errorf("registry gathered %d metrics, err %v", n, err)
	}
}

func TestMalformedInputsAreTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{})
	bad := []struct {
		subject string
		body    []byte
	}{
		{b.names.Start("m1"), []byte(`not json`)},
		{b.names.Start("m2"), []byte(`{"workflow": "has.dot"}`)},
		{b.names.Start("m3"), []byte(`[1,2]`)},
		{b.names.Start("m4"), []byte(`{"workflow":"fake","input":[[[[`)},
		{b.names.Result("m5"), []byte(`{"activation":"a","output":1,"error":{"message":"x"}}`)},
		{b.names.Result("m6"), []byte(`{"output":1}`)},
		{b.names.Timer("m7"), []byte(`{}`)},
		{b.names.Event("m8", "go"), []byte(`{"unterminated`)},
		{b.names.Cancel("m9"), []byte(`"why"`)},
		{b.names.Prefix() + ".in.m10.bogus", []byte(`{}`)},
		{b.names.Prefix() + ".in.m11.start.extra", []byte(`{}`)},
		{b.names.Prefix() + ".in.m12.event", []byte(`{}`)},
	}
	for _, c := range bad {
		b.publish(t, c.subject, c.body, "")
	}
	// A good run behind them is not stalled.
	b.start(t, "good", map[string]any{"value": 7})
	b.waitStatus(t, "good", wire.StatusDone, 10*time.Second)
	b.consumerSettled(t, 5*time.Second)
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%v messages redelivered, want 0 (malformed input must not be retried)", got)
	}
	var malformed float64
	for _, kind := range []string{"start", "result", "timer", "event", "cancel", "unknown"} {
		malformed += testutil.ToFloat64(d.m.messages.WithLabelValues(kind, outcomeMalformed))
	}
	if malformed != float64(len(bad)) {
		t.Errorf("malformed counted %v, want %d", malformed, len(bad))
	}
	for i := range bad {
		if rec := b.record(t, fmt.Sprintf("m%d", i+1)); rec != nil {
			t.Errorf("run m%d has a record after a malformed input", i+1)
		}
	}
}

func TestUnknownWorkflowAndPanicAreTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{RetryDelay: 20 * time.Millisecond})
	b.publish(t, b.names.Start("nowf"), wire.Start{Workflow: "missing"}, "")
	b.start(t, "boom", map[string]any{"panic": true})
	b.start(t, "fine", nil)
	b.waitStatus(t, "fine", wire.StatusDone, 10*time.Second)
	b.consumerSettled(t, 5*time.Second)
	// The panic is terminated at once; the unknown workflow is looked up
	// again (a replica may lag behind a deploy) before it is terminated.
	if got := testutil.ToFloat64(d.m.redelivery); got != unknownWorkflowDeliveries-1 {
		t.Errorf("%v redeliveries, want %d", got, unknownWorkflowDeliveries-1)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("start", outcomeUnknownWorkflow)); got != 1 {
		t.Errorf("unknown workflow counted %v, want 1", got)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("start", outcomeFailed)); got != 1 {
		t.Errorf("reducer panic counted %v, want 1", got)
	}
}

func TestRejectedInputsAreRecordedAndAcked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{RejectedHistory: 2, UnknownRunWait: 300 * time.Millisecond, RetryDelay: 50 * time.Millisecond})
	b.start(t, "r", map[string]any{"events": 5})
	b.waitStatus(t, "r", wire.StatusWaiting, 10*time.Second)
	for i := range 3 {
		b.publish(t, b.names.Result("r"), wire.Result{Activation: fmt.Sprintf("nope%d", i), Output: json.RawMessage(`1`)}, "")
	}
	b.publish(t, b.names.Result("nobody"), wire.Result{Activation: "a", Output: json.RawMessage(`1`)}, "")
	b.consumerSettled(t, 10*time.Second)
	rec := b.record(t, "r")
	if len(rec.Rejected) != 2 {
		t.Fatalf("rejected = %+v, want the last 2", rec.Rejected)
	}
	if rec.Rejected[1].Kind != "result" || rec.Rejected[1].Reason == "" {
		t.Errorf("rejection = %+v", rec.Rejected[1])
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("result", outcomeRejected)); got != 3 {
		t.Errorf("rejected counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("result", outcomeUnknownRun)); got != 1 {
		t.Errorf("unknown run counted %v, want 1", got)
	}
	// A duplicate start is rejected too, and the run goes on.
	b.publish(t, b.names.Start("r"), wire.Start{Workflow: "fake"}, "")
	for i := range 5 {
		b.publish(t, b.names.Event("r", "tick"), i, "")
	}
	rec = b.waitStatus(t, "r", wire.StatusDone, 10*time.Second)
	if got := string(rec.Status.Result); got != `[0,1,2,3,4]` {
		t.Errorf("result = %s", got)
	}
}

func TestCancelEndsRunCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.dispatcher(t, Config{})
	b.start(t, "c", map[string]any{"events": 3})
	b.waitStatus(t, "c", wire.StatusWaiting, 10*time.Second)
	b.publish(t, b.names.Cancel("c"), wire.Cancel{Reason: "test"}, "")
	b.waitStatus(t, "c", wire.StatusCancelled, 10*time.Second)
	// Inputs after the end are rejected, never applied.
	b.publish(t, b.names.Event("c", "tick"), 1, "")
	b.consumerSettled(t, 5*time.Second)
	if rec := b.record(t, "c"); rec.Status.Status != wire.StatusCancelled || len(rec.Rejected) != 1 {
		t.Errorf("after a late event: status %s, rejected %+v", rec.Status.Status, rec.Rejected)
	}
}

func TestConcurrentMessagesOfOneRunAreSerialized(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var inFlight, maxInFlight atomic.Int64
	var mu sync.Mutex
	b.loader.prog = &fakeProgram{}
	d := b.dispatcher(t, Config{Concurrency: 8, hooks: &hooks{at: func(p hookPoint, runID, kind string) error {
		if p != hookAfterSave {
			return nil
		}
		n := inFlight.Add(1)
		mu.Lock()
		maxInFlight.Store(max(maxInFlight.Load(), n))
		mu.Unlock()
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		return nil
	}}})
	b.start(t, "s", map[string]any{"events": 50})
	for i := range 50 {
		b.publish(t, b.names.Event("s", "e"), i, "")
	}
	b.waitStatus(t, "s", wire.StatusDone, 20*time.Second)
	b.consumerSettled(t, 5*time.Second)
	if maxInFlight.Load() != 1 {
		t.Errorf("up to %d steps of one run ran at once, want 1", maxInFlight.Load())
	}
	if got := testutil.ToFloat64(d.m.conflicts); got != 0 {
		t.Errorf("%v CAS conflicts inside one process, want 0", got)
	}
}

func TestOutboxRepublishStoresOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st := &run.State{Workflow: "wf", Revision: "v1"}
	out, _, err := step.Render(b.names, testSigner, "r", st, []run.Effect{
		{ID: "i1", Invoke: &run.Invoke{Activation: "a", Node: "n", Task: "t", Version: "1", Attempt: 1}},
		{ID: "i2", Invoke: &run.Invoke{Activation: "a", Node: "m", Task: "t", Version: "1", Attempt: 1}},
		{ID: "t1", Arm: &run.ArmTimer{ID: "t1", Deadline: float64(time.Now().Add(time.Hour).UnixMilli())}},
		{ID: "s1", Settled: &run.Settled{Status: run.StatusRunning}},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.nc.SubscribeSync(b.names.Status("r"))
	if err != nil {
		t.Fatal(err)
	}
	p := publisher{js: b.js, nc: b.nc, names: b.names}
	for range 3 {
		if err := p.publish(testCtx(t), out); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.stored(t, b.names.TaskStream()); n != 2 {
		t.Errorf("task stream stored %d invocations, want 2", n)
	}
	if n := b.stored(t, b.names.TimerStream()); n != 1 {
		t.Errorf("timer stream stored %d schedules, want 1", n)
	}
	// Announcements are not de-duplicated: each publish announces.
	for range 3 {
		if _, err := sub.NextMsg(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// An input that comes before its run's start answers no run: it is
// terminated at once with the reason, and holds nothing meanwhile.
func TestInputBeforeItsStartIsTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{RetryDelay: 20 * time.Millisecond})
	b.publish(t, b.names.Event("early", "e"), "first", "")
	b.start(t, "early", map[string]any{"events": 1})
	b.publish(t, b.names.Event("early", "e"), "second", "")
	rec := b.waitStatus(t, "early", wire.StatusDone, 10*time.Second)
	if got := string(rec.Status.Result); got != `["second"]` {
		t.Errorf("result %s, want only the event published after the start", got)
	}
	if got := testutil.ToFloat64(d.m.messages.WithLabelValues("event", outcomeUnknownRun)); got != 1 {
		t.Errorf("%v events terminated for an unknown run, want 1", got)
	}
	if got := testutil.ToFloat64(d.m.redelivery); got != 0 {
		t.Errorf("%v redeliveries: the early event waited", got)
	}
}

// A client that retries its start call can store a second start after
// the run's first inputs; an input between the two must wait for the
// first start, not be refused for the second.
func TestInputBetweenTwoStartsWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{})
	b.start(t, "twice", map[string]any{"events": 1})
	b.publish(t, b.names.Event("twice", "e"), "between", "")
	b.publish(t, b.names.Start("twice"), wire.Start{Workflow: "fake"}, "start/twice/retry")
	ctx := testCtx(t)
	first, err := d.startSeq(ctx, "twice")
	if err != nil {
		t.Fatal(err)
	}
	if first != 1 {
		t.Fatalf("start sequence %d, want the first start's 1", first)
	}
	in := &step.Input{RunID: "twice", Kind: "event"}
	meta := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: 2}, Timestamp: time.Now()}
	if reason := d.noRunReason(ctx, d.cfg.Names.StoredInput(b.names.Event("twice", "e"), d.partitions), meta, in); reason != "" {
		t.Errorf("the event between two starts is refused: %s", reason)
	}
	rec := b.waitStatus(t, "twice", wire.StatusDone, 10*time.Second)
	if got := string(rec.Status.Result); got != `["between"]` {
		t.Errorf("result %s, want the event between the starts", got)
	}
}

// An input's run is judged not to exist only by a server that holds the
// input itself, and so every message stored before it: one that does not
// (a replica behind, or a leader just elected that has not applied what
// it committed) may not hold the run's start either. A 30-minute chaos
// run terminated a live run's result on a "none" read through the
// leader, 250 ms after its start was stored.
func TestNoStartCountsOnlyFromAServerHoldingTheInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t, Config{})
	ctx := testCtx(t)
	subject := d.cfg.Names.StoredInput(b.names.Event("ghost", "e"), d.partitions)
	in := &step.Input{RunID: "ghost", Kind: "event"}
	// An input the answering server does not hold (its sequence is past
	// the stream's end): it waits.
	unseen := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: 1_000}, Timestamp: time.Now()}
	if reason := d.noRunReason(ctx, subject, unseen, in); reason != "" {
		t.Errorf("an input the server does not hold was refused: %s", reason)
	}
	// The same input once stored, still without a start: refused.
	b.publish(t, b.names.Event("ghost", "e"), "late", "")
	inputs, err := b.js.Stream(ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	last, err := inputs.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	held := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: last.Sequence}, Timestamp: time.Now()}
	if reason := d.noRunReason(ctx, subject, held, in); !strings.Contains(reason, "holds no start") {
		t.Errorf("an input of no run, held: %q, want it refused for holding no start", reason)
	}
}
