package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// The documents of these tests name tasks no Go worker of the tests
// serves; each test plays the worker itself, badly.
const (
	lonelyDoc = `{"$workflow":"0.2","revision":"lonely/1","initial":"a","states":{
	 "a":{"work":{"task":"lonely","version":"1"},"then":"ok","catch":"timedout"},
	 "ok":{"final":true},"timedout":{"final":true}}}`
	livenessPolicy = `{"*":{"attemptTimeout":"1s","maxAttempts":2,"initialInterval":"50ms","startToClose":"1s"}}`
)

// deployLonely deploys lonelyDoc under name with livenessPolicy.
func (e *env) deployLonely(t *testing.T, name string) {
	t.Helper()
	e.deployLonelyWith(t, name, livenessPolicy)
}

// deployLonelyWith deploys lonelyDoc under name with the policy pol.
func (e *env) deployLonelyWith(t *testing.T, name, pol string) {
	t.Helper()
	p, err := policy.Parse([]byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(lonelyDoc, "lonely/1", name+"/1", 1)
	if _, err := e.f.DeployWith(e.ctx, name, []byte(doc), fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatal(err)
	}
}

// rawWorker consumes the invocations of task lonely@1 the way a client
// written from docs/PROTOCOL.md would, handing each to serve.
func (e *env) rawWorker(t *testing.T, serve func(m jetstream.Msg, inv wire.Invocation)) {
	t.Helper()
	c, err := e.f.JS.Consumer(e.ctx, e.names.TaskStream(), e.names.TaskConsumer("lonely", "1"))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var inv wire.Invocation
		if err := json.Unmarshal(m.Data(), &inv); err != nil {
			t.Errorf("invocation: %v", err)
			return
		}
		serve(m, inv)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
}

// result publishes a result body for inv as a worker does.
func (e *env) result(t *testing.T, inv wire.Invocation, body map[string]any) {
	t.Helper()
	body["activation"], body["node"], body["attempt"], body["token"] = inv.Activation, inv.Node, inv.Attempt, inv.Token
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.JS.Publish(e.ctx, inv.Reply, data); err != nil {
		t.Error(err)
	}
}

// checkForward fails the test if the run's record leaves it stranded.
func (e *env) checkForward(t *testing.T, runID string) {
	t.Helper()
	rec := e.record(t, runID)
	if rec == nil {
		t.Fatalf("run %s has no record", runID)
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Stranded(); err != nil {
		t.Fatal(err)
	}
}

// A task nobody serves ends at its deadline, through its retries, in the
// work state's catch: the run never waits for ever.
func TestUnservedTaskTimesOut(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployLonely(t, "unserved")
	began := time.Now()
	e.start(t, "unserved", "u1", nil)
	e.waitStatus(t, "u1", wire.StatusRunning, 5*time.Second)
	e.checkForward(t, "u1")
	st := e.wait(t, "u1", 20*time.Second)
	if st.Status != wire.StatusDone || st.State != "/states/timedout" {
		t.Fatalf("run ended %s in %s, want done in the catch state", st.Status, st.State)
	}
	if !strings.Contains(string(st.Result), "lonely@1 attempt 2 had no accepted result within its attemptTimeout of 1s") {
		t.Errorf("result %s, want the timeout of the second attempt", st.Result)
	}
	if took := time.Since(began); took < 2*time.Second {
		t.Errorf("settled after %s, before two attempts of 1s could time out", took)
	}
	checkReplay(t, e, "u1")
}

// A worker that gives every invocation back until NATS stops
// redelivering it, one that acknowledges and never answers, and one
// whose result is malformed all leave the attempt to its deadline.
func TestMisbehavingWorkersEndAtTheDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none, taskPolicy: provision.TaskPolicy{MaxDeliver: 2}})
	e.deployLonely(t, "misbehave")
	var calls atomic.Int64
	e.rawWorker(t, func(m jetstream.Msg, inv wire.Invocation) {
		if inv.Deadline == 0 {
			t.Errorf("invocation without a deadline: %s", m.Data())
		}
		switch inv.Run {
		case "nak":
			_ = m.Nak()
		case "drop":
			_ = m.DoubleAck(e.ctx)
		case "undefined":
			// What JSON.stringify makes of a handler returning undefined.
			e.result(t, inv, map[string]any{})
			_ = m.DoubleAck(e.ctx)
		case "late-good":
			if inv.Attempt == 1 {
				e.result(t, inv, map[string]any{"error": map[string]any{"code": "X"}})
			} else {
				e.result(t, inv, map[string]any{"output": "fine"})
			}
			_ = m.DoubleAck(e.ctx)
		}
		calls.Add(1)
	})
	for _, id := range []string{"nak", "drop", "undefined", "late-good"} {
		e.start(t, "misbehave", id, nil)
	}
	for _, id := range []string{"nak", "drop", "undefined"} {
		st := e.wait(t, id, 20*time.Second)
		if st.State != "/states/timedout" || !strings.Contains(string(st.Result), "TASK_TIMEOUT") && !strings.Contains(string(st.Result), "no accepted result") {
			t.Errorf("run %s ended in %s with %s, want the catch state after timeouts", id, st.State, st.Result)
		}
		checkReplay(t, e, id)
	}
	// The invocations nobody acknowledged (NATS stopped redelivering the
	// NAKed ones) expire from the work queue a little after their deadline.
	natstest.WaitFor(t, 30*time.Second, "task stream empty", func() error {
		s, err := e.f.JS.Stream(e.ctx, e.names.TaskStream())
		if err != nil {
			return err
		}
		info, err := s.Info(e.ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("%d invocations left", info.State.Msgs)
		}
		return nil
	})
	st := e.wait(t, "late-good", 20*time.Second)
	if st.State != "/states/ok" || string(st.Result) != `"fine"` {
		t.Errorf("late-good ended in %s with %s, want its second attempt's output", st.State, st.Result)
	}
	for id, want := range map[string]string{"undefined": "neither output nor error", "late-good": "error.message is empty"} {
		rec := e.record(t, id)
		if len(rec.Rejected) == 0 || !strings.Contains(rec.Rejected[0].Reason, want) {
			t.Errorf("run %s rejected %+v, want a refusal saying %q", id, rec.Rejected, want)
		}
	}
	checkReplay(t, e, "late-good")
}

// After a run settles, its deadline timer never fires: the settling step
// dropped the schedule.
func TestSettledRunLeavesNoDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	// An attempt deadline far beyond the run's few milliseconds, so the
	// purge that follows the settling save cannot lose to the fire even
	// on a loaded machine; 1 s did, once.
	const deadline = 8 * time.Second
	e.deployLonelyWith(t, "quick", `{"*":{"attemptTimeout":"8s","maxAttempts":2,"initialInterval":"50ms","startToClose":"8s"}}`)
	started := time.Now()
	e.rawWorker(t, func(m jetstream.Msg, inv wire.Invocation) {
		e.result(t, inv, map[string]any{"output": 1})
		_ = m.DoubleAck(e.ctx)
	})
	e.start(t, "quick", "q1", nil)
	if st := e.wait(t, "q1", 10*time.Second); st.State != "/states/ok" {
		t.Fatalf("run ended in %s", st.State)
	}
	s, err := e.f.JS.Stream(e.ctx, e.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	// The settling step purges the schedules after it saves the record,
	// so the purge may trail the settled status; a fire that beats it is
	// caught below.
	natstest.WaitFor(t, time.Minute, "no schedule pending after the run settled", func() error {
		info, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.Schedule("q1", ">")))
		if err != nil {
			return err
		}
		for subj := range info.State.Subjects {
			if m, err := s.GetLastMsgForSubject(e.ctx, subj); err == nil && m.Header.Get("Nats-Schedule") != "" {
				return fmt.Errorf("a schedule is still pending on %s: %v", subj, m.Header)
			}
		}
		return nil
	})
	// Past the deadline, no fire reached the run (read where the input
	// stream stores it).
	time.Sleep(time.Until(started.Add(deadline + 2*time.Second)))
	in, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := in.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := in.GetLastMsgForSubject(e.ctx, e.names.StoredInput(e.names.Timer("q1"), provision.Partitions(cfg.Config))); err == nil {
		t.Fatalf("a deadline fired for a settled run: %s", m.Data)
	}
}

// An event the waiting state does not wait for, or whose guard fails, is
// consumed without effect as the reference does, and the record says so.
func TestIgnoredEventsAreRecorded(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.start(t, "approval", "ig1", nil)
	e.waitStatus(t, "ig1", wire.StatusWaiting, 5*time.Second)
	if err := e.f.Client.SendEvent(e.ctx, "ig1", "aproved", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 5*time.Second, "ignored event recorded", func() error {
		rec := e.record(t, "ig1")
		if len(rec.Ignored) != 1 {
			return fmt.Errorf("ignored %+v", rec.Ignored)
		}
		if r := rec.Ignored[0].Reason; !strings.Contains(r, `"aproved" matched no transition`) {
			t.Fatalf("reason %q", r)
		}
		return nil
	})
	if st, _ := e.f.Client.Status(e.ctx, "ig1"); st.Status != wire.StatusWaiting {
		t.Errorf("status %s after an ignored event, want waiting", st.Status)
	}
	if rec := e.record(t, "ig1"); len(rec.Rejected) != 0 {
		t.Errorf("an ignored event is listed as rejected: %+v", rec.Rejected)
	}
}
