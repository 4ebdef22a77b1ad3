package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// crashAckWait is the dispatchers' AckWait in the crash tests: how soon
// the inputs a killed dispatcher held are redelivered.
const crashAckWait = time.Second

// TestCrashWindows kills a dispatcher process (it SIGKILLs itself) right
// after it saved a step and before it published the step's effects, or
// after it published them and before it acknowledged the input; for the
// run's start and for its task result. Another dispatcher must finish the
// run with the right result, one stored invocation, one task execution
// and no input applied twice.
func TestCrashWindows(t *testing.T) {
	t.Parallel()
	for _, point := range []string{dispatcher.CrashAfterSave, dispatcher.CrashAfterPublish} {
		for _, kind := range []string{subjects.KindStart, subjects.KindResult} {
			t.Run(point+"/"+kind, func(t *testing.T) {
				t.Parallel()
				e := setup(t, options{dispatchers: none})
				p := e.spawnDispatcher(t, point+"/"+kind, crashAckWait)
				e.start(t, "one", "c", 21)
				if line, want := p.next(t, 30*time.Second), fmt.Sprintf("crash %s %s c", point, kind); line != want {
					t.Fatalf("dispatcher process said %q, want %q", line, want)
				}
				p.waitKilled(t)

				e.addDispatcher(dispatcher.Config{AckWait: crashAckWait})
				checkSurvivor(t, e, kind)
			})
		}
	}
	// The same seam in process: a hook that returns an error stops the
	// step there and the dispatcher handles nothing more until Stop.
	t.Run("in process", func(t *testing.T) {
		t.Parallel()
		e := setup(t, options{dispatchers: none})
		e.crashOnce(t, func(p, _, kind string) bool {
			return p == dispatcher.CrashAfterSave && kind == subjects.KindResult
		}, func() { e.start(t, "one", "c", 21) })
		checkSurvivor(t, e, subjects.KindResult)
	})
}

// crashOnce runs start beside an in-process dispatcher whose step fails
// (as a kill would leave it) the first time at matches, stops that
// dispatcher, and starts a fresh one in its place.
func (e *env) crashOnce(t *testing.T, at func(point, runID, kind string) bool, start func()) {
	t.Helper()
	crashed := make(chan struct{})
	var once sync.Once
	d := e.addDispatcher(dispatcher.Config{AckWait: crashAckWait, CrashHook: func(p, runID, kind string) error {
		var err error
		if at(p, runID, kind) {
			once.Do(func() { close(crashed); err = errors.New("simulated kill") })
		}
		return err
	}})
	start()
	select {
	case <-crashed:
	case <-time.After(time.Minute):
		t.Fatal("the crash point was never reached")
	}
	stopWithin(t, "crashed dispatcher", d.Stop)
	e.addDispatcher(dispatcher.Config{AckWait: crashAckWait})
}

// checkSurvivor checks that run "c" of workflow "one" ended right after a
// crash at an input of kind: one stored invocation, one task execution,
// each input applied once, the crashed step's input recognised as applied.
func checkSurvivor(t *testing.T, e *env, kind string) {
	t.Helper()
	st := e.wait(t, "c", 30*time.Second)
	if st.Status != wire.StatusDone || string(st.Result) != "42" {
		t.Fatalf("status %+v, want done with 42", st)
	}
	e.consumerSettled(t, 15*time.Second)
	if got := e.lastSeq(t, e.names.TaskStream()); got != 1 {
		t.Errorf("%d invocations stored, want 1", got)
	}
	if rec := e.checkRecord(t, "c", 0); len(rec.Applied) != 2 {
		t.Errorf("applied %v, want the start and the result", rec.Applied)
	}
	if got := len(e.tasks.invocations("c")); got != 1 {
		t.Errorf("the task ran %d times, want once", got)
	}
	if got := e.messages(t, kind, "duplicate"); got != 1 {
		t.Errorf("%v redelivered %s inputs recognised as applied, want 1", got, kind)
	}
	checkReplay(t, e, "c")
}

// TestKillDispatcherMidRun SIGKILLs one of two dispatcher processes while
// hundreds of three-task runs are in flight; the other must finish every
// run, each task attempt running and each input applying exactly once.
func TestKillDispatcherMidRun(t *testing.T) {
	t.Parallel()
	const runs = 200
	e := setup(t, options{dispatchers: none, workers: 2})
	victim := e.spawnDispatcher(t, "", crashAckWait)
	e.spawnDispatcher(t, "", crashAckWait)
	for i := range runs {
		e.start(t, "nested", fmt.Sprintf("k%03d", i), map[string]any{"n": i})
	}
	natstest.WaitFor(t, 60*time.Second, "a third of the tasks ran", func() error {
		if got := e.tasks.total(); got < runs {
			return fmt.Errorf("%d of %d tasks ran", got, 3*runs)
		}
		return nil
	})
	victim.kill(t)
	killedAfter := e.tasks.total()

	for i := range runs {
		id := fmt.Sprintf("k%03d", i)
		st := e.wait(t, id, 60*time.Second)
		if want := fmt.Sprintf(`{"n":%d}`, i+3); st.Status != wire.StatusDone || string(st.Result) != want {
			t.Fatalf("run %s: status %+v, want done with %s", id, st, want)
		}
		if rec := e.checkRecord(t, id, 0); len(rec.Applied) != 4 {
			t.Errorf("run %s: applied %v, want the start and three results", id, rec.Applied)
		}
	}
	e.consumerSettled(t, 15*time.Second)
	if got := e.lastSeq(t, e.names.TaskStream()); got != 3*runs {
		t.Errorf("%d invocations stored, want %d", got, 3*runs)
	}
	if got := e.tasks.total(); got != 3*runs {
		t.Errorf("%d task attempts ran, want %d", got, 3*runs)
	}
	for i := 0; i < runs; i += 10 {
		checkReplay(t, e, fmt.Sprintf("k%03d", i))
	}
	t.Logf("killed a dispatcher process after %d of %d tasks; the survivor finished every run", killedAfter, 3*runs)
}

// TestServerRestartMidRun stops the NATS server while runs wait on timers
// and tasks, keeps it down past the timers' deadlines, and starts it again
// on the same store: every run must resume and end as if nothing happened,
// no timer firing before its deadline.
//
// Messages a consumer delivered just before the shutdown are lost in
// flight and redelivered only after the consumer's AckWait (found by this
// test: with the defaults, 1 minute for a task and 30 s for a run
// input), so both are short here. A task whose acknowledgement is lost to
// the outage runs again on redelivery (at least once), and one whose
// invocation a dispatcher publishes again after the restart runs again on
// a first delivery (taskLog.repeated); a timer may fire again
// (repeatsRefused). Each result and each fire is still applied once.
func TestServerRestartMidRun(t *testing.T) {
	t.Parallel()
	const each = 10
	e := setup(t, options{
		dispatcher:   dispatcher.Config{AckWait: 3 * time.Second},
		taskPolicy:   provision.TaskPolicy{StartToClose: 3 * time.Second},
		redeliveries: true,
	})
	type started struct {
		id, workflow string
		at           time.Time
	}
	var all []started
	for i := range each {
		for _, wf := range []string{"nap", "nested", "flaky"} {
			id := fmt.Sprintf("%s-%d", wf, i)
			all = append(all, started{id, wf, time.Now()})
			e.start(t, wf, id, map[string]any{"n": i})
		}
	}
	// Every nap run's start applied, its timer armed. (Waiting for each
	// to show "waiting" in turn failed on a loaded machine: a nap looked
	// at late had fired already and was done.)
	natstest.WaitFor(t, 30*time.Second, "every nap run started", func() error {
		for i := range each {
			if id := fmt.Sprintf("nap-%d", i); e.record(t, id) == nil {
				return fmt.Errorf("run %s has no record", id)
			}
		}
		return nil
	})
	waiting := 0
	for i := range each {
		if st, err := e.f.Client.Status(e.ctx, fmt.Sprintf("nap-%d", i)); err == nil && st.Status == wire.StatusWaiting {
			waiting++
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := e.f.Server.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped the server with %d of %d nap runs waiting on their timer", waiting, each)
	// Down past every nap timer's deadline: they must fire on restart.
	time.Sleep(time.Until(all[len(all)-1].at.Add(2 * time.Second)))
	e.restarted = time.Now()
	if err := e.f.Server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		st := e.wait(t, r.id, 60*time.Second)
		want := map[string]string{"nap": `{"n":%d}`, "nested": `{"n":%d}`, "flaky": `{"attempt":3,"input":{"n":%d}}`}[r.workflow]
		var i int
		if _, err := fmt.Sscanf(r.id[len(r.workflow)+1:], "%d", &i); err != nil {
			t.Fatalf("run %s: no number after the workflow's name: %v", r.id, err)
		}
		switch r.workflow {
		case "nap":
			want = fmt.Sprintf(want, i+1)
			if due := float64(r.at.UnixMilli() + 1500); st.Time < due {
				t.Errorf("run %s: timer fired at %v, before its deadline %v", r.id, st.Time, due)
			}
		case "nested":
			want = fmt.Sprintf(want, i+3)
		default:
			want = fmt.Sprintf(want, i)
		}
		if st.Status != wire.StatusDone || canonical(t, string(st.Result)) != canonical(t, want) {
			t.Errorf("run %s: status %+v, want done with %s", r.id, st, want)
			continue
		}
		e.checkRecord(t, r.id, repeatsRefused(t, e, r.id))
		checkReplay(t, e, r.id)
	}
	t.Logf("%d task attempts ran again after the restart on a first delivery", e.tasks.copiesAfter(e.restarted))
}

// repeatsRefused checks that a run's history holds no task result
// applied twice for one attempt and no refused input but repeats, and
// returns how many repeats it refused. After a server restart a timer can
// fire again (the server fires a schedule at least once, and a dispatcher
// that publishes the run's outbox again stores the schedule anew once the
// restarted server has forgotten the message id of the one that fired),
// and a task attempt can run again (docs/RELIABILITY.md): the run refuses
// the second fire (no longer armed, or the run is done), and the second
// result unless the stream drops it as a duplicate.
func repeatsRefused(t *testing.T, e *env, runID string) int {
	t.Helper()
	fired := map[wire.Timer]bool{}
	results := map[attemptKey]bool{}
	repeats := 0
	for _, m := range e.annotated(t, runID) {
		_, kind, _, err := e.names.ParseInput(m.Subject)
		if err != nil {
			t.Fatalf("run %s: input seq %d: %v", runID, m.Seq, err)
		}
		applied, refused := m.Verdict == replay.VerdictApplied, m.Verdict == replay.VerdictRejected
		switch kind {
		case subjects.KindTimer:
			var tm wire.Timer
			if err := json.Unmarshal(m.Data, &tm); err != nil {
				t.Fatalf("run %s: timer seq %d: %v", runID, m.Seq, err)
			}
			switch {
			case applied:
				fired[tm] = true
			case refused && fired[tm]:
				repeats++
			case refused:
				t.Errorf("run %s: timer fire seq %d %+v refused (%s), and not as the repeat of an applied fire", runID, m.Seq, tm, m.Reason)
			}
		case subjects.KindResult:
			var res wire.Result
			if err := json.Unmarshal(m.Data, &res); err != nil {
				t.Fatalf("run %s: result seq %d: %v", runID, m.Seq, err)
			}
			k := attemptKey{runID, res.Activation, res.Node, res.Attempt}
			switch {
			case applied && results[k]:
				t.Errorf("run %s: a result of attempt %d of %s %s applied twice (seq %d)", runID, res.Attempt, res.Activation, res.Node, m.Seq)
			case applied:
				results[k] = true
			case refused && results[k]:
				repeats++
			case refused:
				t.Errorf("run %s: result seq %d of attempt %d refused (%s), and not as the repeat of an applied result", runID, m.Seq, res.Attempt, m.Reason)
			}
		default:
			if refused {
				t.Errorf("run %s: %s input seq %d refused: %s", runID, kind, m.Seq, m.Reason)
			}
		}
	}
	if repeats > 0 {
		t.Logf("run %s: %d repeated inputs refused", runID, repeats)
	}
	return repeats
}
