package cli

import (
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/runrecord"
)

// record is a run record holding st, which applied the inputs applied.
func record(t *testing.T, st *run.State, applied ...uint64) *runrecord.Record {
	t.Helper()
	data, err := run.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	return &runrecord.Record{State: data, Applied: applied}
}

func state(status run.Status, active ...string) *run.State {
	return &run.State{RunID: "r", Status: status, Control: statechart.State{Active: active}, Context: run.Context{Results: map[string]any{}, Visits: map[string]any{}}}
}

// TestJudgeEvent: what event --wait says of each step that took an event.
func TestJudgeEvent(t *testing.T) {
	t.Parallel()
	waiting := record(t, state(run.StatusWaiting, "/states/gate"), 1)
	busy := state(run.StatusRunning, "/states/work")
	buffered := state(run.StatusRunning, "/states/work")
	buffered.Buffered = []run.Event{{Type: "go"}}
	paused := state(run.StatusWaiting, "/states/gate")
	paused.Paused = &run.Paused{Since: 1, Was: run.StatusWaiting}
	paused.Held = []run.Held{{Kind: run.KindEvent, Event: &run.Event{Type: "go"}}}
	ignored := record(t, state(run.StatusWaiting, "/states/gate"), 1, 2)
	ignored.Ignored = []runrecord.Rejection{{Seq: 2, Kind: "event", Reason: `event "stop" matched no transition: the run waits in /states/gate for "go"`}}
	rejected := record(t, state(run.StatusDone, "/states/end"), 1)
	rejected.Rejected = []runrecord.Rejection{{Seq: 2, Kind: "event", Reason: `message rejected: run "r" is done`}}
	for _, c := range []struct {
		name         string
		before, rec  *runrecord.Record
		verdict, has string
	}{
		{"not yet", waiting, record(t, state(run.StatusWaiting, "/states/gate"), 1), "", ""},
		{"moved", waiting, record(t, state(run.StatusDone, "/states/end"), 1, 2), "moved", "from gate to end; the run is done"},
		{"buffered", record(t, busy, 1), record(t, buffered, 1, 2), "buffered", "it is in work"},
		{"held", waiting, record(t, paused, 1, 2), "held", "jetflow resume"},
		{"ignored", waiting, ignored, "ignored", `event "stop" matched no transition`},
		{"rejected", waiting, rejected, "rejected", `run "r" is done`},
	} {
		o := judgeEvent(c.before, c.rec, 2, "go")
		switch {
		case c.verdict == "" && o != nil:
			t.Errorf("%s: %+v before the step took the event", c.name, o)
		case c.verdict != "" && (o == nil || o.Verdict != c.verdict || !strings.Contains(o.Text, c.has)):
			t.Errorf("%s: %+v, want %s saying %q", c.name, o, c.verdict, c.has)
		}
	}
}
