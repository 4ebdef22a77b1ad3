package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

func init() {
	// a held task, then a wait for "go" whose timer is far away: the
	// order of a held result and a held event decides the end.
	workflows["pausable"] = `{"$workflow":"0.2","revision":"pausable/1","initial":"a","states":{
		"a":{"work":{"task":"hold","version":"1"},"then":"w"},
		"w":{"on":[{"event":"go","to":"done"}],"after":{"ms":60000,"to":"late"}},
		"done":{"final":true},"late":{"final":true}}}`
	// a wait whose timer leaves the test ample time to pause it first.
	workflows["pausenap"] = `{"$workflow":"0.2","revision":"pausenap/1","initial":"wait","states":{
		"wait":{"on":[{"event":"go","to":"early"}],"after":{"ms":3000,"to":"late"}},
		"early":{"final":true},"late":{"final":true}}}`
}

// heldState waits until the run's state holds n inputs for its resume
// and returns it.
func (e *env) heldState(t *testing.T, runID string, n int) *run.State {
	t.Helper()
	var st *run.State
	natstest.WaitFor(t, 15*time.Second, fmt.Sprintf("run %s holds %d inputs", runID, n), func() error {
		rec := e.record(t, runID)
		if rec == nil {
			return errors.New("no record")
		}
		var err error
		if st, err = step.DecodeState(rec); err != nil {
			return err
		}
		if len(st.Held) != n {
			return fmt.Errorf("%d held", len(st.Held))
		}
		return nil
	})
	return st
}

func waitHeld(t *testing.T, e *env, runID string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case id := <-e.tasks.held:
			if id == runID {
				return
			}
		case <-deadline:
			t.Fatalf("the hold task of %s never started", runID)
		}
	}
}

// TestPauseHoldsAndResumeReleasesInOrder: a paused run records the
// result of the task that was running and an event, invokes nothing and
// does not move; its resume applies both in arrival order.
func TestPauseHoldsAndResumeReleasesInOrder(t *testing.T) {
	e := setup(t, options{})
	const id = "pause-1"
	e.start(t, "pausable", id, 1)
	waitHeld(t, e, id)
	if err := e.f.Client.Pause(e.ctx, id, "upstream down", "ana"); err != nil {
		t.Fatal(err)
	}
	st := e.waitStatus(t, id, wire.StatusPaused, 15*time.Second)
	if st.Since == 0 || st.Reason != "upstream down" || st.Operator != "ana" || st.State != "/states/a" {
		t.Fatalf("paused status %+v", st)
	}
	// The running task's result arrives and is held, then the event.
	e.tasks.unhold(id)
	e.heldState(t, id, 1)
	if err := e.f.Client.SendEvent(e.ctx, id, "go", map[string]any{"by": "test"}); err != nil {
		t.Fatal(err)
	}
	held := e.heldState(t, id, 2)
	if held.Held[0].Kind != run.KindResult || held.Held[1].Kind != run.KindEvent || held.Status != run.StatusPaused {
		t.Fatalf("held %+v in status %s", held.Held, held.Status)
	}
	if st, err := e.f.Client.Status(e.ctx, id); err != nil || st.Status != wire.StatusPaused || st.State != "/states/a" {
		t.Fatalf("a paused run moved: %+v, %v", st, err)
	}
	// A second pause is refused and recorded.
	if err := e.f.Client.Pause(e.ctx, id, "", ""); err != nil {
		t.Fatal(err)
	}
	waitRejected(t, e, id, 1)

	if err := e.f.Client.Resume(e.ctx, id, "provider back", "ana"); err != nil {
		t.Fatal(err)
	}
	end := e.wait(t, id, 15*time.Second)
	if end.Status != wire.StatusDone || end.State != "/states/done" {
		t.Fatalf("after resume: %+v", end)
	}
	if n := len(e.tasks.invocations(id)); n != 1 {
		t.Fatalf("%d invocations, want 1", n)
	}
	rec := e.checkRecord(t, id, 1)
	if !strings.Contains(rec.Rejected[0].Reason, "already paused") {
		t.Errorf("rejection %+v", rec.Rejected[0])
	}
	checkReplay(t, e, id)
}

// TestPausedRunFiresNoTimer: a wait's timer that comes due while the run
// is paused is held, not fired; at resume it fires at once.
func TestPausedRunFiresNoTimer(t *testing.T) {
	e := setup(t, options{})
	const id = "pause-2"
	e.start(t, "pausenap", id, nil)
	e.waitStatus(t, id, wire.StatusWaiting, 15*time.Second)
	if err := e.f.Client.Pause(e.ctx, id, "", ""); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, id, wire.StatusPaused, 15*time.Second)
	held := e.heldState(t, id, 1)
	if held.Held[0].Kind != run.KindTimer || held.Status != run.StatusPaused {
		t.Fatalf("held %+v in status %s", held.Held, held.Status)
	}
	if err := e.f.Client.Resume(e.ctx, id, "", ""); err != nil {
		t.Fatal(err)
	}
	end := e.wait(t, id, 15*time.Second)
	if end.Status != wire.StatusDone || end.State != "/states/late" {
		t.Fatalf("after resume: %+v", end)
	}
	e.checkRecord(t, id, 0)
	checkReplay(t, e, id)
}

// TestTerminateDuringTask: terminate ends a run at once, whether paused
// or not; the result of the task it abandoned is refused as for any
// settled run.
func TestTerminateDuringTask(t *testing.T) {
	e := setup(t, options{})
	for _, paused := range []bool{false, true} {
		id := fmt.Sprintf("term-%v", paused)
		e.start(t, "hold", id, 1)
		waitHeld(t, e, id)
		if paused {
			if err := e.f.Client.Pause(e.ctx, id, "", ""); err != nil {
				t.Fatal(err)
			}
			e.waitStatus(t, id, wire.StatusPaused, 15*time.Second)
		}
		if err := e.f.Client.Terminate(e.ctx, id, "duplicate order", "ana"); err != nil {
			t.Fatal(err)
		}
		end := e.wait(t, id, 15*time.Second)
		if end.Status != wire.StatusTerminated || end.Reason != "duplicate order" || end.Operator != "ana" || end.Since == 0 {
			t.Fatalf("terminated status %+v", end)
		}
		e.tasks.unhold(id)
		waitRejected(t, e, id, 1)
		rec := e.checkRecord(t, id, 1)
		if r := rec.Rejected[0]; r.Kind != "result" || !strings.Contains(r.Reason, "is terminated") {
			t.Errorf("paused=%v: rejection %+v", paused, r)
		}
		checkReplay(t, e, id)
	}
}
