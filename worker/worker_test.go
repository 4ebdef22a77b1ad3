package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

func TestResultLandsOnReplySubject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	seen := make(chan worker.Invocation, 1)
	b.start(t, b.config(), func(ctx context.Context, inv worker.Invocation) (any, error) {
		seen <- inv
		var in struct{ Amount int }
		if err := inv.DecodeInput(&in); err != nil {
			return nil, err
		}
		var with struct{ Currency string }
		if err := inv.DecodeWith(&with); err != nil {
			return nil, err
		}
		return map[string]any{"charged": in.Amount, "currency": with.Currency}, nil
	})
	inv := b.invocation("n1", map[string]any{"amount": 42})
	inv.With = json.RawMessage(`{"currency":"EUR"}`)
	b.publish(t, inv)

	res, msg := b.result(t)
	if msg.Subject != b.names.Result("r1") {
		t.Errorf("result subject = %q, want %q", msg.Subject, b.names.Result("r1"))
	}
	if res.Activation != inv.Activation || res.Node != "n1" || res.Attempt != 1 || res.Token != "tok-n1" {
		t.Errorf("result does not echo the invocation: %+v", res)
	}
	if res.Error != nil || string(res.Output) != `{"charged":42,"currency":"EUR"}` {
		t.Errorf("result = output %s error %+v", res.Output, res.Error)
	}
	if got, want := msg.Header.Get(wire.HeaderMsgID), worker.ResultMsgID("tok-n1"); got != want {
		t.Errorf("Nats-Msg-Id = %q, want %q", got, want)
	}
	got := <-seen
	if got.Run != "r1" || got.State != "/states/pay" || got.Task != task || got.Version != version || got.Delivery != 1 || got.Attempt != 1 {
		t.Errorf("handler saw %+v", got)
	}
	b.waitStreamMsgs(t, 0) // acknowledged
}

func TestNullOutputAndMissingInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	b.start(t, b.config(), func(_ context.Context, inv worker.Invocation) (any, error) {
		if string(inv.Input) != "null" || inv.With != nil {
			return nil, fmt.Errorf("input %q with %q", inv.Input, inv.With)
		}
		return nil, nil
	})
	inv := b.invocation("n1", nil)
	inv.Input = nil // absent: treated as null
	b.publish(t, inv)
	res, _ := b.result(t)
	if res.Error != nil || string(res.Output) != "null" {
		t.Errorf("result = output %s error %+v, want output null", res.Output, res.Error)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	const limit, total = 3, 12
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	var active, peak atomic.Int32
	started := make(chan struct{}, total)
	gate := make(chan struct{})
	cfg := b.config()
	cfg.Concurrency = limit
	b.start(t, cfg, func(ctx context.Context, inv worker.Invocation) (any, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return inv.Node, nil
	})
	for i := range total {
		b.publish(t, b.invocation(fmt.Sprint("n", i), i))
	}
	for range limit {
		select {
		case <-started:
		case <-time.After(wait):
			t.Fatalf("fewer than %d handlers started", limit)
		}
	}
	// Saturated: the worker must not hold more than it runs.
	if info := b.consumerInfo(t); info.NumAckPending != limit {
		t.Errorf("ack pending with %d handlers busy = %d, want %d", limit, info.NumAckPending, limit)
	}
	close(gate)
	got := b.resultsByNode(t, total)
	for i := range total {
		if r := got[fmt.Sprint("n", i)]; r.Error != nil {
			t.Errorf("node n%d failed: %+v", i, r.Error)
		}
	}
	if p := peak.Load(); p != limit {
		t.Errorf("peak concurrency = %d, want %d", p, limit)
	}
}

// TestHeartbeatsPreventRedelivery runs on the real clock: what it waits
// for is the server's AckWait, which no clock of the worker's can move.
// How the worker paces its heartbeats is heartbeat_internal_test.go's,
// on a manual clock.
func TestHeartbeatsPreventRedelivery(t *testing.T) {
	t.Parallel()
	const ackWait = 600 * time.Millisecond
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{StartToClose: ackWait})
	// Every +WPI the worker sends to the server passes this subscription.
	progress := make(chan struct{}, 64)
	sub, err := b.nc.Subscribe("$JS.ACK."+b.names.TaskStream()+".>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" {
			progress <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var calls atomic.Int32
	b.start(t, b.config(), func(ctx context.Context, inv worker.Invocation) (any, error) {
		calls.Add(1)
		began := time.Now()
		// Run until four heartbeats went out (four thirds of AckWait).
		for i := range 4 {
			select {
			case <-progress:
			case <-time.After(wait):
				return nil, fmt.Errorf("heartbeat %d never sent", i+1)
			}
		}
		return time.Since(began).Milliseconds(), nil
	})
	b.publish(t, b.invocation("slow", nil))
	res, _ := b.result(t)
	if res.Error != nil {
		t.Fatal(res.Error.Message)
	}
	var ran int64
	if err := json.Unmarshal(res.Output, &ran); err != nil || time.Duration(ran)*time.Millisecond <= ackWait {
		t.Fatalf("handler ran %sms, want longer than AckWait %v (%v)", res.Output, ackWait, err)
	}
	b.waitStreamMsgs(t, 0)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if info := b.consumerInfo(t); info.NumRedelivered != 0 || info.Delivered.Consumer != 1 {
		t.Errorf("redelivered %d, delivered %d; want 0 and 1", info.NumRedelivered, info.Delivered.Consumer)
	}
}

func TestPanicBecomesTaskError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	b.start(t, b.config(), func(_ context.Context, inv worker.Invocation) (any, error) {
		if inv.Node == "boom" {
			panic("card reader on fire")
		}
		return "fine", nil
	})
	b.publish(t, b.invocation("boom", nil))
	b.publish(t, b.invocation("ok", nil))
	got := b.resultsByNode(t, 2)
	if e := got["boom"].Error; e == nil || !strings.Contains(e.Message, "card reader on fire") || e.NonRetryable {
		t.Errorf("panic result error = %+v", e)
	}
	if string(got["ok"].Output) != `"fine"` {
		t.Errorf("worker stopped serving after a panic: %+v", got["ok"])
	}
	if !b.logs.contains("panicked", "card reader on fire", "stack=") {
		t.Error("panic not logged with its stack")
	}
	b.waitStreamMsgs(t, 0)
}

func TestErrorsMapToTheWire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	errs := map[string]error{
		"plain":   errors.New("declined"),
		"final":   worker.NonRetryable(errors.New("card expired")),
		"coded":   worker.WithCode("RATE_LIMIT", errors.New("slow down")),
		"both":    worker.WithCode("FRAUD", worker.NonRetryable(errors.New("blocked"))),
		"wrapped": fmt.Errorf("charging: %w", worker.NonRetryable(worker.WithCode("E42", errors.New("no")))),
		"badin":   nil, // DecodeInput fails: non-retryable
	}
	want := map[string]wire.TaskError{
		"plain":   {Message: "declined"},
		"final":   {Message: "card expired", NonRetryable: true},
		"coded":   {Message: "slow down", Code: "RATE_LIMIT"},
		"both":    {Message: "blocked", Code: "FRAUD", NonRetryable: true},
		"wrapped": {Message: "charging: no", Code: "E42", NonRetryable: true},
		"badin":   {Message: "decoding task input: json: cannot unmarshal string into Go value of type int", NonRetryable: true},
	}
	b.start(t, b.config(), func(_ context.Context, inv worker.Invocation) (any, error) {
		if inv.Node == "badin" {
			var n int
			return nil, inv.DecodeInput(&n)
		}
		return nil, errs[inv.Node]
	})
	for node := range errs {
		b.publish(t, b.invocation(node, "text"))
	}
	got := b.resultsByNode(t, len(errs))
	for node, w := range want {
		r := got[node]
		if r.Error == nil || *r.Error != w || r.Output != nil {
			t.Errorf("%s: result = output %s error %+v, want error %+v", node, r.Output, r.Error, w)
		}
	}
}

func TestGracefulStopFinishesInFlightWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	started := make(chan struct{})
	gate := make(chan struct{})
	w := b.start(t, b.config(), func(ctx context.Context, _ worker.Invocation) (any, error) {
		close(started)
		<-gate
		return "finished", ctx.Err()
	})
	b.publish(t, b.invocation("n1", nil))
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(testCtx(t)) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a handler was running", err)
	default:
	}
	close(gate)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Stop did not return after the handler finished")
	}
	// Everything happened before Stop returned: result out, invocation acked.
	select {
	case m := <-b.results:
		if !strings.Contains(string(m.Data), `"finished"`) {
			t.Errorf("result = %s", m.Data)
		}
	default:
		t.Fatal("Stop returned before the result was published")
	}
	if n := b.streamMsgs(t); n != 0 {
		t.Errorf("Stop returned before the ack: stream holds %d", n)
	}
}

func TestStopDeadlineCancelsHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	started := make(chan struct{})
	cause := make(chan error, 1)
	w := b.start(t, b.config(), func(ctx context.Context, _ worker.Invocation) (any, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	b.publish(t, b.invocation("n1", nil))
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an expired context = %v, want context.Canceled", err)
	}
	if c := <-cause; !errors.Is(c, worker.ErrStopped) {
		t.Errorf("handler context cause = %v, want ErrStopped", c)
	}
	// The invocation was handed back, not failed: no result, and another
	// worker gets it long before the consumer's AckWait (1 minute).
	select {
	case m := <-b.results:
		t.Errorf("a cancelled handler published %s", m.Data)
	default:
	}
	deliveries := make(chan uint64, 1)
	b.start(t, b.config(), func(_ context.Context, inv worker.Invocation) (any, error) {
		deliveries <- inv.Delivery
		return "second worker", nil
	})
	if res, _ := b.result(t); string(res.Output) != `"second worker"` {
		t.Errorf("result = %+v", res)
	}
	if d := <-deliveries; d != 2 {
		t.Errorf("second worker saw delivery %d, want 2", d)
	}
	if !b.logs.contains("handed back", "run_id=r1") {
		t.Error("the hand-back was not logged")
	}
}

func TestMalformedInvocationsAreTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	terms := b.terminations(t)
	var calls atomic.Int32
	b.start(t, b.config(), func(context.Context, worker.Invocation) (any, error) {
		calls.Add(1)
		return "ok", nil
	})
	valid := b.invocation("good", nil)
	mutate := func(f func(*wire.Invocation)) []byte {
		inv := valid
		f(&inv)
		body, _ := json.Marshal(inv)
		return body
	}
	bad := map[string][]byte{
		"not JSON":        []byte("charge it"),
		"empty object":    []byte("{}"),
		"array":           []byte("[1]"),
		"trailing data":   append(mutate(func(*wire.Invocation) {}), []byte(" {}")...),
		"wrong task":      mutate(func(i *wire.Invocation) { i.Task = "refund" }),
		"attempt 0":       mutate(func(i *wire.Invocation) { i.Attempt = 0 }),
		"no token":        mutate(func(i *wire.Invocation) { i.Token = "" }),
		"foreign reply":   mutate(func(i *wire.Invocation) { i.Reply = "elsewhere.x" }),
		"start as reply":  mutate(func(i *wire.Invocation) { i.Reply = b.names.Start("r1") }),
		"bad run id":      mutate(func(i *wire.Invocation) { i.Run = "r.1"; i.Reply = "wt.in.r.1.result" }),
		"input not JSON":  []byte(`{"run":"r1","input":nope}`),
		"attempt as text": []byte(`{"run":"r1","attempt":"1"}`),
	}
	for _, body := range bad {
		b.publishRaw(t, body)
	}
	b.publish(t, valid)
	res, _ := b.result(t)
	if res.Node != "good" || string(res.Output) != `"ok"` {
		t.Errorf("the valid invocation after malformed ones gave %+v", res)
	}
	for range bad {
		select {
		case r := <-terms:
			if !strings.Contains(r, "malformed invocation") {
				t.Errorf("termination reason %q", r)
			}
		case <-time.After(wait):
			t.Fatal("not every malformed invocation was terminated")
		}
	}
	b.waitStreamMsgs(t, 0)
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want once (malformed invocations must not reach it)", n)
	}
	subj := "subject=" + b.names.Task(task, version)
	for _, reason := range []string{"not a JSON invocation", "names task \"refund\"", "attempt 0", "token is missing", "is not the result subject"} {
		if !b.logs.contains("malformed", subj, reason) {
			t.Errorf("no log line with the subject and reason %q", reason)
		}
	}
}

func TestDuplicateResultsAreDeduplicated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	b.start(t, b.config(), func(context.Context, worker.Invocation) (any, error) { return 1, nil })
	// The same attempt delivered twice (as after a lost ack): both runs
	// publish, the input stream keeps one result.
	inv := b.invocation("n1", nil)
	b.publish(t, inv)
	b.publish(t, inv)
	b.result(t)
	b.result(t)
	s, err := b.js.Stream(testCtx(t), b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("input stream holds %d results, want 1", info.State.Msgs)
	}
}

func TestOversizedOutputBecomesTaskError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	size := int(b.nc.MaxPayload()) + 1
	b.start(t, b.config(), func(context.Context, worker.Invocation) (any, error) {
		return strings.Repeat("x", size), nil
	})
	b.publish(t, b.invocation("big", nil))
	res, _ := b.result(t)
	if res.Error == nil || !res.Error.NonRetryable || !strings.Contains(res.Error.Message, "max payload") {
		t.Errorf("result error = %+v", res.Error)
	}
	b.waitStreamMsgs(t, 0)
}

func TestResultAboveTheStreamLimitBecomesTaskError(t *testing.T) {
	t.Parallel()
	b := setupWith(t, 4096)
	b.ensure(t, worker.TaskPolicy{})
	b.start(t, b.config(), func(_ context.Context, inv worker.Invocation) (any, error) {
		return strings.Repeat("x", 5000), nil
	})
	b.publish(t, b.invocation("big", nil))
	b.waitStreamMsgs(t, 0)
	// Core subscribers also see the refused publish; the stream holds
	// only the error result.
	s, err := b.js.Stream(testCtx(t), b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	stored := b.names.StoredInput(b.names.Result("r1"), provision.Partitions(info.Config))
	m, err := s.GetLastMsgForSubject(testCtx(t), stored)
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := json.Unmarshal(m.Data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || !res.Error.NonRetryable || !strings.Contains(res.Error.Message, "maximum message size of stream") || res.Output != nil {
		t.Errorf("stored result = error %+v, %d output bytes", res.Error, len(res.Output))
	}
	if m.Sequence != 1 {
		t.Errorf("stored result is message %d, want the only one", m.Sequence)
	}
}

func TestWorkerWaitsForItsConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clk := clock.NewManual(time.Now())
	cfg := b.config()
	cfg.Clock = clk
	b.start(t, cfg, func(context.Context, worker.Invocation) (any, error) { return "late", nil })
	if !b.logs.contains("consumer not found", "charge") {
		t.Error("a missing consumer was not logged")
	}
	// The pull loop failed to bind too, and pauses before it tries again.
	if err := clk.AwaitTimers(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	b.ensure(t, worker.TaskPolicy{}) // the deployment arrives
	clk.Advance(time.Minute)         // past any pause of the retry backoff
	b.publish(t, b.invocation("n1", nil))
	if res, _ := b.result(t); string(res.Output) != `"late"` {
		t.Errorf("result = %+v", res)
	}
}

func TestCreateConsumers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.CreateConsumers = true
	cfg.ConsumerPolicy = worker.TaskPolicy{StartToClose: 7 * time.Second, MaxAckPending: 9}
	b.start(t, cfg, func(context.Context, worker.Invocation) (any, error) { return "ok", nil })
	info := b.consumerInfo(t)
	if info.Config.AckWait != 7*time.Second || info.Config.MaxAckPending != 9 || info.Config.FilterSubject != b.names.Task(task, version) {
		t.Errorf("created consumer config = %+v", info.Config)
	}
	b.publish(t, b.invocation("n1", nil))
	b.result(t)
}

func TestTwoTasksInOneWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.ensure(t, worker.TaskPolicy{})
	if _, err := provision.EnsureTaskConsumer(testCtx(t), b.js, b.names, "refund", "2", provision.TaskPolicy{}); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(b.js, b.config())
	if err != nil {
		t.Fatal(err)
	}
	for _, tv := range [][2]string{{task, version}, {"refund", "2"}} {
		if err := w.Register(tv[0], tv[1], func(_ context.Context, inv worker.Invocation) (any, error) {
			return inv.Task + "@" + inv.Version, nil
		}, worker.MaxConcurrency(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(testCtx(t)) }()
	b.publish(t, b.invocation("a", nil))
	inv := b.invocation("b", nil)
	inv.Task, inv.Version = "refund", "2"
	body, _ := json.Marshal(inv)
	if _, err := b.js.Publish(testCtx(t), b.names.Task("refund", "2"), body); err != nil {
		t.Fatal(err)
	}
	got := b.resultsByNode(t, 2)
	if string(got["a"].Output) != `"charge@1.0"` || string(got["b"].Output) != `"refund@2"` {
		t.Errorf("results = %+v", got)
	}
}
