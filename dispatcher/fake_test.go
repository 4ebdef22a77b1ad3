package dispatcher

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/step"
)

// fakeLoader serves fakeProgram as workflow "fake" (revision "r1"); any
// other name is not deployed.
type fakeLoader struct {
	prog  *fakeProgram
	loads atomic.Int64
}

func (l *fakeLoader) Load(_ context.Context, name, revision string) (*step.Definition, error) {
	l.loads.Add(1)
	if name != "fake" || (revision != "" && revision != "r1") {
		return nil, fmt.Errorf("%w: %s@%s", registry.ErrUnknownWorkflow, name, revision)
	}
	return &step.Definition{Name: "fake", Revision: "r1", Program: l.prog}, nil
}

// fakeProgram is a tiny reducer with the real one's contract, so the
// runtime can be tested before (and independently of) the engine. Its
// start input chooses the run's shape:
//
//	{"task": "t", "version": "1", "payload": x}  invoke t@1 with x; done with its output
//	{"sleepMs": n} or {"at": ms}                 arm a timer; done when it fires
//	{"events": n}                                done after n events, with their payloads
//	{"panic": true}                              the reducer panics
//	anything else                                done at once with the input
type fakeProgram struct {
	applies atomic.Int64
}

func (p *fakeProgram) Apply(st *run.State, msg run.Message) (*run.State, []run.Effect, error) {
	p.applies.Add(1)
	if msg.Kind == run.KindStart {
		if st != nil {
			return nil, nil, fmt.Errorf("%w: run %s already started", run.ErrRejected, msg.RunID)
		}
		return p.start(msg)
	}
	if st == nil {
		return nil, nil, fmt.Errorf("%w: no run", run.ErrRejected)
	}
	if st.Status.Terminal() {
		return nil, nil, fmt.Errorf("%w: run is %s", run.ErrRejected, st.Status)
	}
	next := clone(st)
	next.Control.Time = msg.Time
	snap := next.Context.Data.(map[string]any)
	switch msg.Kind {
	case run.KindResult:
		r := msg.Result
		if r.Activation != snap["activation"] {
			return nil, nil, fmt.Errorf("%w: unknown activation %q", run.ErrRejected, r.Activation)
		}
		if r.Error != nil {
			return p.settle(next, run.StatusFailed, nil, &run.Failure{Code: "TASK", Message: r.Error.Message})
		}
		return p.settle(next, run.StatusDone, r.Output, nil)
	case run.KindTimer:
		if msg.Timer.ID != snap["timer"] {
			return nil, nil, fmt.Errorf("%w: stale timer %q", run.ErrRejected, msg.Timer.ID)
		}
		return p.settle(next, run.StatusDone, map[string]any{"slept": true, "fired": msg.Time}, nil)
	case run.KindEvent:
		events := append(snap["events"].([]any), msg.Event.Payload)
		snap["events"] = events
		if float64(len(events)) >= snap["want"].(float64) {
			return p.settle(next, run.StatusDone, events, nil)
		}
		return next, nil, nil
	case run.KindCancel:
		return p.settle(next, run.StatusCancelled, nil, nil)
	}
	return nil, nil, fmt.Errorf("%w: kind %s", run.ErrRejected, msg.Kind)
}

func (p *fakeProgram) start(msg run.Message) (*run.State, []run.Effect, error) {
	st := &run.State{
		RunID: msg.RunID, Status: run.StatusRunning,
		Context: run.Context{Data: map[string]any{"changes": 0.0}, Results: map[string]any{}, Visits: map[string]any{}},
	}
	st.Control.Active, st.Control.Time = []string{"fake"}, msg.Time
	snap := st.Context.Data.(map[string]any)
	in, _ := msg.Input.(map[string]any)
	switch {
	case in["panic"] == true:
		panic("fake reducer panic")
	case in["task"] != nil:
		act := "a-" + msg.RunID
		snap["activation"] = act
		eff := run.Effect{ID: "invoke/" + act + "/1", Invoke: &run.Invoke{
			Activation: act, State: "/states/work", Node: "n", Task: in["task"].(string),
			Version: in["version"].(string), Attempt: 1, Input: in["payload"],
		}}
		next, effs, err := p.settle(st, run.StatusRunning, nil, nil)
		return next, append([]run.Effect{eff}, effs...), err
	case in["sleepMs"] != nil || in["at"] != nil:
		deadline, ok := in["at"].(float64)
		if !ok {
			deadline = msg.Time + in["sleepMs"].(float64)
		}
		snap["timer"] = "sleep"
		eff := run.Effect{ID: "timer/sleep", Arm: &run.ArmTimer{ID: "sleep", Deadline: deadline}}
		next, effs, err := p.settle(st, run.StatusWaiting, nil, nil)
		return next, append([]run.Effect{eff}, effs...), err
	case in["events"] != nil:
		snap["want"], snap["events"] = in["events"], []any{}
		return p.settle(st, run.StatusWaiting, nil, nil)
	}
	return p.settle(st, run.StatusDone, msg.Input, nil)
}

func (p *fakeProgram) settle(st *run.State, s run.Status, result any, f *run.Failure) (*run.State, []run.Effect, error) {
	snap := st.Context.Data.(map[string]any)
	n := snap["changes"].(float64) + 1
	snap["changes"] = n
	st.Status, st.Error = s, f
	if result != nil {
		snap["result"] = result
	}
	return st, []run.Effect{{ID: "status/" + strconv.Itoa(int(n)), Settled: &run.Settled{Status: s, Result: result, Error: f}}}, nil
}

// clone deep-copies a state through its stored form, as a real reducer
// must never modify its input.
func clone(st *run.State) *run.State {
	data, err := run.Encode(st)
	if err != nil {
		panic(err)
	}
	c, err := run.Decode(data)
	if err != nil {
		panic(err)
	}
	return c
}
