package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// redriveDoc fans out to a (no checkpoint) and b (checkpoint); f takes
// a's output and fails until its worker is fixed.
const (
	redriveDoc = `{"$workflow":"0.2","revision":"rdfan/1","initial":"fan","states":{
	 "fan":{"work":{"dag":{"$dag":"0.1","nodes":{
	   "in":{"kind":"input"},
	   "a":{"kind":"task","run":"rd-a","version":"1"},
	   "b":{"kind":"task","run":"rd-b","version":"1","checkpoint":true},
	   "f":{"kind":"task","run":"rd-fix","version":"1"},
	   "join":{"kind":"query","query":{"a":"$.a","b":"$.b","f":"$.f"}},
	   "out":{"kind":"output"}},
	  "edges":[{"from":"in","to":"a"},{"from":"in","to":"b"},{"from":"a","to":"f"},
	   {"from":"a","to":"join","port":"a"},{"from":"b","to":"join","port":"b"},{"from":"f","to":"join","port":"f"},
	   {"from":"join","to":"out"}]}},"then":"done"},
	 "done":{"final":true}}}`
	redrivePolicy = `{"*":{"attemptTimeout":"20s","maxAttempts":2,"initialInterval":"20ms"}}`
	// slowDoc's only task times out after a second, once, uncaught.
	slowDoc    = `{"$workflow":"0.2","revision":"rdslow/1","initial":"a","states":{"a":{"work":{"task":"rd-slow","version":"1"},"then":"done"},"done":{"final":true}}}`
	slowPolicy = `{"*":{"attemptTimeout":"1s","maxAttempts":1,"startToClose":"1s"}}`
)

// rawTasks serves tasks the way a worker written from docs/PROTOCOL.md
// would, counting every invocation per node.
type rawTasks struct {
	mu    sync.Mutex
	calls map[string][]wire.Invocation
}

func (r *rawTasks) record(inv wire.Invocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[inv.Node] = append(r.calls[inv.Node], inv)
}

func (r *rawTasks) of(node string) []wire.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Invocation(nil), r.calls[node]...)
}

// deployWith deploys doc under name with a task policy and returns the
// revision.
func (e *env) deployWith(t *testing.T, name, doc, pol string) string {
	t.Helper()
	p, err := policy.Parse([]byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.f.DeployWith(e.ctx, name, []byte(doc), fleet.DeployOptions{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return d.Revision
}

// serveRaw consumes task@1's invocations; answer returns the result body
// to publish, or nil to leave the attempt unanswered.
func (e *env) serveRaw(t *testing.T, log *rawTasks, task string, answer func(inv wire.Invocation) map[string]any) {
	t.Helper()
	c, err := e.f.JS.Consumer(e.ctx, e.names.TaskStream(), e.names.TaskConsumer(task, "1"))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var inv wire.Invocation
		if err := json.Unmarshal(m.Data(), &inv); err != nil {
			t.Errorf("invocation: %v", err)
			return
		}
		log.record(inv)
		if body := answer(inv); body != nil {
			e.result(t, inv, body)
		}
		_ = m.DoubleAck(e.ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
}

// serveRedrive serves redriveDoc's tasks: a and b answer, f fails until
// fixed; once fixed, f's invocations go to fixedCh unanswered when it is
// not nil, and are answered "F" otherwise.
func (e *env) serveRedrive(t *testing.T, fixed *atomic.Bool, fixedCh chan wire.Invocation) *rawTasks {
	t.Helper()
	log := &rawTasks{calls: map[string][]wire.Invocation{}}
	e.serveRaw(t, log, "rd-a", func(wire.Invocation) map[string]any { return map[string]any{"output": "A"} })
	e.serveRaw(t, log, "rd-b", func(wire.Invocation) map[string]any { return map[string]any{"output": "B"} })
	e.serveRaw(t, log, "rd-fix", func(inv wire.Invocation) map[string]any {
		switch {
		case string(inv.Input) != `"A"`:
			t.Errorf("f's input %s, want a's output", inv.Input)
		case !fixed.Load():
			return map[string]any{"error": map[string]any{"message": "upstream down", "code": "DOWN"}}
		case fixedCh != nil:
			fixedCh <- inv
			return nil
		}
		return map[string]any{"output": "F"}
	})
	return log
}

func (e *env) redrive(t *testing.T, runID string) (*wire.Status, error) {
	t.Helper()
	seq, err := e.f.Client.Redrive(e.ctx, runID, "worker fixed")
	if err != nil {
		t.Fatal(err)
	}
	return e.f.Client.Redriven(e.ctx, runID, seq)
}

// A DAG whose task failed runs on after a redrive once its worker is
// fixed: the nodes that succeeded are not invoked again, the failed one
// is, above its earlier attempts, and a late result of a failed attempt
// is refused.
func TestRedriveAfterTheWorkerIsFixed(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rdfan", redriveDoc, redrivePolicy)
	var fixed atomic.Bool
	fixedCh := make(chan wire.Invocation, 1)
	log := e.serveRedrive(t, &fixed, fixedCh)
	e.start(t, "rdfan", "rd1", 5)
	st := e.wait(t, "rd1", 30*time.Second)
	if st.Status != wire.StatusFailed || st.Error == nil || !strings.Contains(st.Error.Message, "upstream down") {
		t.Fatalf("run ended %+v, want failed on f", st)
	}
	failedF := log.of("f")
	if len(failedF) != 2 || len(log.of("a")) != 1 || len(log.of("b")) != 1 {
		t.Fatalf("before the redrive a ran %d, b %d, f %d times; want 1, 1, 2", len(log.of("a")), len(log.of("b")), len(failedF))
	}

	fixed.Store(true)
	after, err := e.redrive(t, "rd1")
	if err != nil || after.Status != wire.StatusRunning {
		t.Fatalf("after the redrive: %+v, %v; want running", after, err)
	}
	var inv wire.Invocation
	select {
	case inv = <-fixedCh:
	case <-time.After(30 * time.Second):
		t.Fatal("f was not invoked again")
	}
	if inv.Attempt <= failedF[1].Attempt || inv.Activation != failedF[1].Activation || inv.Deadline == 0 {
		t.Fatalf("redriven attempt %d of %s (deadline %v), want above %d of the same activation, with a deadline",
			inv.Attempt, inv.Activation, inv.Deadline, failedF[1].Attempt)
	}
	e.checkForward(t, "rd1")
	// The failed attempt's result, late, with its valid token: refused.
	e.result(t, failedF[1], map[string]any{"output": "stale"})
	natstest.WaitFor(t, 20*time.Second, "the stale result refused", func() error {
		for _, r := range e.record(t, "rd1").Rejected {
			if r.Kind == subjects.KindResult && strings.Contains(r.Reason, "is not in flight") {
				return nil
			}
		}
		return errors.New("not refused yet")
	})
	e.result(t, inv, map[string]any{"output": "F"})
	st = e.wait(t, "rd1", 30*time.Second)
	if st.Status != wire.StatusDone || canonical(t, string(st.Result)) != canonical(t, `{"a":"A","b":"B","f":"F"}`) {
		t.Fatalf("redriven run ended %+v", st)
	}
	if len(log.of("a")) != 1 || len(log.of("b")) != 1 || len(log.of("f")) != 3 {
		t.Errorf("a ran %d, b %d, f %d times; want 1, 1, 3", len(log.of("a")), len(log.of("b")), len(log.of("f")))
	}
	rec := e.checkRecord(t, "rd1", 1)
	if s, err := step.DecodeState(rec); err != nil || s.Redrives != 1 {
		t.Errorf("redrives %+v, %v; want 1", s, err)
	}
	checkReplay(t, e, "rd1")
}

// A task that timed out is invoked again by a redrive, with a deadline.
func TestRedriveAfterATaskTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rdslow", slowDoc, slowPolicy)
	var fixed atomic.Bool
	log := &rawTasks{calls: map[string][]wire.Invocation{}}
	e.serveRaw(t, log, "rd-slow", func(inv wire.Invocation) map[string]any {
		if !fixed.Load() {
			return nil // a worker that never answers
		}
		return map[string]any{"output": "late but fine"}
	})
	e.start(t, "rdslow", "ts1", nil)
	st := e.wait(t, "ts1", 30*time.Second)
	if st.Status != wire.StatusFailed || !strings.Contains(st.Error.Message, "had no accepted result within its attemptTimeout of 1s") {
		t.Fatalf("run ended %+v, want failed on the timeout", st)
	}
	fixed.Store(true)
	if after, err := e.redrive(t, "ts1"); err != nil || after.Status == wire.StatusFailed {
		t.Fatalf("after the redrive: %+v, %v", after, err)
	}
	st = e.wait(t, "ts1", 30*time.Second)
	if st.Status != wire.StatusDone || string(st.Result) != `"late but fine"` {
		t.Fatalf("redriven run ended %+v", st)
	}
	if calls := log.of("task"); len(calls) != 2 || calls[1].Deadline == 0 {
		t.Errorf("invocations %+v, want two, the second with a deadline", calls)
	}
	checkReplay(t, e, "ts1")
}

// A redrive of a run that is running or done is refused, and the run's
// record says why.
func TestRedriveRefusesLiveAndFinishedRuns(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.start(t, "one", "done1", 21)
	if st := e.wait(t, "done1", 30*time.Second); st.Status != wire.StatusDone {
		t.Fatalf("run ended %+v", st)
	}
	e.start(t, "hold", "held1", nil)
	select {
	case <-e.tasks.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold task never started")
	}
	for id, status := range map[string]string{"done1": "done", "held1": "running"} {
		_, err := e.redrive(t, id)
		want := fmt.Sprintf("run %q is %s: only a failed run can be redriven", id, status)
		if !errors.Is(err, client.ErrRedriveRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("redrive of %s: %v, want a refusal saying %q", id, err, want)
		}
		rec := e.checkRecord(t, id, 1)
		if rec.Rejected[0].Kind != subjects.KindRedrive {
			t.Errorf("run %s recorded %+v", id, rec.Rejected)
		}
		checkReplay(t, e, id)
	}
	e.tasks.unhold("held1")
	if st := e.wait(t, "held1", 30*time.Second); st.Status != wire.StatusDone {
		t.Fatalf("held run ended %+v after a refused redrive", st)
	}
}

// A dispatcher process killed right after it saved (or published) a
// redrive leaves it to another, which applies it once: one more
// invocation of the failed node, stored once.
func TestRedriveSurvivesADispatcherKill(t *testing.T) {
	t.Parallel()
	for _, point := range []string{dispatcher.CrashAfterSave, dispatcher.CrashAfterPublish} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{dispatchers: none, workers: none})
			e.deployWith(t, "rdfan", redriveDoc, redrivePolicy)
			var fixed atomic.Bool
			log := e.serveRedrive(t, &fixed, nil)
			p := e.spawnDispatcher(t, point+"/"+subjects.KindRedrive, crashAckWait)
			e.start(t, "rdfan", "rk", 5)
			if st := e.wait(t, "rk", 30*time.Second); st.Status != wire.StatusFailed {
				t.Fatalf("run ended %+v, want failed", st)
			}
			fixed.Store(true)
			if _, err := e.f.Client.Redrive(e.ctx, "rk", "after a kill"); err != nil {
				t.Fatal(err)
			}
			if line, want := p.next(t, 30*time.Second), fmt.Sprintf("crash %s %s rk", point, subjects.KindRedrive); line != want {
				t.Fatalf("dispatcher process said %q, want %q", line, want)
			}
			p.waitKilled(t)

			e.addDispatcher(dispatcher.Config{AckWait: crashAckWait})
			st := e.wait(t, "rk", 30*time.Second)
			if st.Status != wire.StatusDone || canonical(t, string(st.Result)) != canonical(t, `{"a":"A","b":"B","f":"F"}`) {
				t.Fatalf("redriven run ended %+v", st)
			}
			e.consumerSettled(t, 15*time.Second)
			if got := e.lastSeq(t, e.names.TaskStream()); got != 5 {
				t.Errorf("%d invocations stored, want 5 (a, b, f twice, f redriven)", got)
			}
			if len(log.of("a")) != 1 || len(log.of("b")) != 1 || len(log.of("f")) != 3 {
				t.Errorf("a ran %d, b %d, f %d times; want 1, 1, 3", len(log.of("a")), len(log.of("b")), len(log.of("f")))
			}
			// the killed dispatcher's redrive comes back at least once; on a
			// loaded machine its AckWait may lapse again before the next
			// dispatcher acknowledges it, and each delivery is refused the
			// same way (Redrives below stays 1)
			if got := e.messages(t, subjects.KindRedrive, "duplicate"); got < 1 {
				t.Errorf("%v redelivered redrives recognised as applied, want at least 1", got)
			}
			rec := e.checkRecord(t, "rk", 0)
			if s, err := step.DecodeState(rec); err != nil || s.Redrives != 1 {
				t.Errorf("redrives %+v, %v; want 1", s, err)
			}
			checkReplay(t, e, "rk")
		})
	}
}

// parDoc runs x and y side by side; parPolicy retries a failure after an
// hour, so that a retry timer is still pending when the run fails.
const (
	parDoc = `{"$workflow":"0.2","revision":"rdpar/1","initial":"fan","states":{
	 "fan":{"work":{"dag":{"$dag":"0.1","nodes":{
	   "in":{"kind":"input"},
	   "x":{"kind":"task","run":"rd-x","version":"1"},
	   "y":{"kind":"task","run":"rd-y","version":"1"},
	   "join":{"kind":"query","query":{"x":"$.x","y":"$.y"}},
	   "out":{"kind":"output"}},
	  "edges":[{"from":"in","to":"x"},{"from":"in","to":"y"},
	   {"from":"x","to":"join","port":"x"},{"from":"y","to":"join","port":"y"},{"from":"join","to":"out"}]}},"then":"done"},
	 "done":{"final":true}}}`
	parPolicy = `{"*":{"attemptTimeout":"20s","maxAttempts":2,"initialInterval":"1h","maxInterval":"1h"}}`
)

// A failed run keeps its pending timer schedules (a purge carried out
// late could remove the timers of its redrive), the redrive supersedes
// them, and the run purges its schedules once it is done.
func TestFailedRunKeepsItsSchedulesForARedrive(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rdpar", parDoc, parPolicy)
	var fixed atomic.Bool
	xFailed := make(chan struct{})
	log := &rawTasks{calls: map[string][]wire.Invocation{}}
	e.serveRaw(t, log, "rd-x", func(inv wire.Invocation) map[string]any {
		if len(log.of("x")) == 1 {
			return map[string]any{"error": map[string]any{"message": "try later"}}
		}
		return map[string]any{"output": "X"}
	})
	e.serveRaw(t, log, "rd-y", func(inv wire.Invocation) map[string]any {
		if fixed.Load() {
			return map[string]any{"output": "Y"}
		}
		select { // fail only once x waits for its retry
		case <-xFailed:
		case <-time.After(30 * time.Second):
			t.Error("x never waited for its retry")
		}
		return map[string]any{"error": map[string]any{"message": "down", "nonRetryable": true}}
	})
	e.start(t, "rdpar", "keep", nil)
	natstest.WaitFor(t, 30*time.Second, "x waiting for its retry", func() error {
		rec := e.record(t, "keep")
		if rec == nil {
			return errors.New("no record")
		}
		st, err := step.DecodeState(rec)
		if err != nil {
			return err
		}
		if st.Work == nil || st.Work.Running["x"] == nil || !st.Work.Running["x"].Waiting {
			return errors.New("x not waiting")
		}
		return nil
	})
	close(xFailed)
	if st := e.wait(t, "keep", 30*time.Second); st.Status != wire.StatusFailed {
		t.Fatalf("run ended %+v, want failed", st)
	}
	e.consumerSettled(t, 15*time.Second)
	if n := e.schedules(t, "keep"); n == 0 {
		t.Fatal("the failed run's pending retry schedule was purged")
	}
	fixed.Store(true)
	if _, err := e.redrive(t, "keep"); err != nil {
		t.Fatal(err)
	}
	st := e.wait(t, "keep", 30*time.Second)
	if st.Status != wire.StatusDone || canonical(t, string(st.Result)) != canonical(t, `{"x":"X","y":"Y"}`) {
		t.Fatalf("redriven run ended %+v", st)
	}
	e.consumerSettled(t, 15*time.Second)
	if n := e.schedules(t, "keep"); n != 0 {
		t.Errorf("%d schedules left after the redriven run is done, want them purged", n)
	}
	checkReplay(t, e, "keep")
}

// schedules counts the messages the timer stream holds on a run's
// schedule subjects.
func (e *env) schedules(t *testing.T, runID string) uint64 {
	t.Helper()
	s, err := e.f.JS.Stream(e.ctx, e.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.Schedule(runID, ">")))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// polDoc's one task fails its first two calls; its first policy gives it
// one attempt, the one deployed after the failure three.
const polDoc = `{"$workflow":"0.2","revision":"rdpol/1","initial":"a","states":{"a":{"work":{"task":"rd-pol","version":"1"},"then":"done"},"done":{"final":true}}}`

// A redrive can move a failed run to the same document deployed with
// another policy, and refuses a revision of another document.
func TestRedriveOntoANewPolicy(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	first := e.deployWith(t, "rdpol", polDoc, `{"*":{"maxAttempts":1}}`)
	log := &rawTasks{calls: map[string][]wire.Invocation{}}
	e.serveRaw(t, log, "rd-pol", func(wire.Invocation) map[string]any {
		if len(log.of("task")) <= 2 {
			return map[string]any{"error": map[string]any{"message": "not yet"}}
		}
		return map[string]any{"output": "third time"}
	})
	e.start(t, "rdpol", "pol1", nil)
	if st := e.wait(t, "pol1", 30*time.Second); st.Status != wire.StatusFailed || st.Revision != first {
		t.Fatalf("run ended %+v, want failed on revision %s", st, first)
	}
	otherDoc := strings.Replace(strings.Replace(polDoc, `"then":"done"`, `"then":"done","catch":"done"`, 1), "rdpol/1", "rdpol/x", 1)
	other := e.deployWith(t, "rdpol", otherDoc, `{"*":{"maxAttempts":3}}`)
	retried := e.deployWith(t, "rdpol", strings.Replace(polDoc, "rdpol/1", "rdpol/2", 1), `{"*":{"maxAttempts":3,"initialInterval":"20ms"}}`)
	if retried == first || other == first {
		t.Fatalf("revisions %s, %s, %s: want three", first, other, retried)
	}
	seq, err := e.f.Client.Redrive(e.ctx, "pol1", "", client.RedriveRevision(other))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.Client.Redriven(e.ctx, "pol1", seq); !errors.Is(err, client.ErrRedriveRefused) || !strings.Contains(err.Error(), "runs another workflow") {
		t.Fatalf("redrive onto another document: %v, want a refusal", err)
	}
	seq, err = e.f.Client.Redrive(e.ctx, "pol1", "policy fixed", client.RedriveRevision(retried))
	if err != nil {
		t.Fatal(err)
	}
	if after, err := e.f.Client.Redriven(e.ctx, "pol1", seq); err != nil || after.Revision != retried {
		t.Fatalf("after the redrive: %+v, %v; want revision %s", after, err, retried)
	}
	st := e.wait(t, "pol1", 30*time.Second)
	if st.Status != wire.StatusDone || string(st.Result) != `"third time"` || st.Revision != retried {
		t.Fatalf("redriven run ended %+v", st)
	}
	if n := len(log.of("task")); n != 3 {
		t.Errorf("the task ran %d times, want 3 (one, then two under the new policy)", n)
	}
	e.checkRecord(t, "pol1", 1)
	checkReplay(t, e, "pol1")
}
