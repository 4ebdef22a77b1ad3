package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// TestPausedTaskSpendsNoAttempt: while an operator pauses a task version,
// its invocations are not delivered and an attempt whose deadline passes
// starts over instead of timing out; once resumed, the run completes.
// (After the resume the attempt's deadline counts again as usual, so
// which attempt completes it is not asserted: a slow machine may retry.)
func TestPausedTaskSpendsNoAttempt(t *testing.T) {
	timeouts := func(task, _ string) run.Timeouts {
		if task == "double" {
			return run.Timeouts{AttemptMs: 2000}
		}
		return run.Timeouts{}
	}
	e := setup(t, options{dispatcher: dispatcher.Config{RunOptions: run.Options{Timeouts: timeouts}}})
	if _, err := provision.PauseTask(e.ctx, e.f.JS, e.names, "double", "1", time.Time{}); err != nil {
		t.Fatal(err)
	}
	paused, _, err := provision.TaskPaused(e.ctx, e.f.JS, e.names, "double", "1")
	if err != nil || !paused {
		t.Fatalf("task double@1 paused: %v, %v", paused, err)
	}
	const id = "tp-1"
	e.start(t, "one", id, 21)
	first := e.runState(t, id, "the first attempt in flight", func(st *run.State) bool { return st.Deadline > 0 })
	// Past the first deadline, twice: each time the attempt starts over.
	later := first.Deadline
	for range 2 {
		st := e.runState(t, id, "the attempt postponed", func(st *run.State) bool { return st.Deadline > later })
		if st.Status != run.StatusRunning || len(st.Work.Running) != 1 {
			t.Fatalf("a paused task's run: %s, running %+v", st.Status, st.Work.Running)
		}
		for node, a := range st.Work.Running {
			if a.Attempt != 1 || a.Waiting {
				t.Fatalf("node %s: attempt %+v, want the first still in flight", node, a)
			}
		}
		later = st.Deadline
	}
	if n := len(e.tasks.invocations(id)); n != 0 {
		t.Fatalf("%d invocations delivered while the task was paused", n)
	}

	if err := provision.ResumeTask(e.ctx, e.f.JS, e.names, "double", "1"); err != nil {
		t.Fatal(err)
	}
	end := e.wait(t, id, 30*time.Second)
	if end.Status != wire.StatusDone || canonical(t, string(end.Result)) != "42" {
		t.Fatalf("after the task's resume: %+v", end)
	}
	checkReplay(t, e, id)
}

// runState waits until the run's state satisfies ok.
func (e *env) runState(t *testing.T, runID, what string, ok func(*run.State) bool) *run.State {
	t.Helper()
	var st *run.State
	natstest.WaitFor(t, 30*time.Second, "run "+runID+": "+what, func() error {
		rec := e.record(t, runID)
		if rec == nil {
			return errors.New("no record")
		}
		var err error
		if st, err = step.DecodeState(rec); err != nil {
			return err
		}
		if !ok(st) {
			return fmt.Errorf("status %s, deadline %.0f", st.Status, st.Deadline)
		}
		return nil
	})
	return st
}
