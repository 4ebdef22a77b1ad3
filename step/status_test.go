package step

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestStatusOf(t *testing.T) {
	t.Parallel()
	state := func(status run.Status, active string, data any, failure *run.Failure) *run.State {
		st := &run.State{Workflow: "wf", Revision: "v1", RunID: "r1", Status: status, Error: failure}
		st.Control.Active = []string{active}
		st.Control.Time = 2000
		st.Context.Data = data
		st.Context.Results, st.Context.Visits = map[string]any{}, map[string]any{}
		return st
	}
	boom := &run.Failure{Code: "JF2006", Path: "/nodes/x", Message: "JF2006: node 'x' failed: boom at /nodes/x"}
	waiting := &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusWaiting, State: "/states/wait", Time: 1500}
	cancelled := &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusCancelled, State: "/states/wait", Time: 2500}
	for _, c := range []struct {
		name      string
		st        *run.State
		announced *wire.Status
		want      *wire.Status
	}{
		{
			name: "announced", st: state(run.StatusWaiting, "/states/wait", nil, nil), announced: waiting,
			want: waiting,
		},
		{
			name: "not yet announced", st: state(run.StatusRunning, "/states/work", map[string]any{"n": 1.0}, nil),
			want: &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusRunning, State: "/states/work", Time: 2000},
		},
		{
			// The state moved past its announcement: the state wins.
			name: "announcement behind the state", st: state(run.StatusRunning, "/states/work", nil, nil), announced: waiting,
			want: &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusRunning, State: "/states/work", Time: 2000},
		},
		{
			// Canonical JSON, as an announcement encodes it: keys sorted,
			// nothing escaped that needs no escape.
			name: "done with a result", st: state(run.StatusDone, "/states/done", map[string]any{"z": "<&>", "a": 1e21, "m": []any{2.50, nil}}, nil),
			want: &wire.Status{
				Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusDone, State: "/states/done", Time: 2000,
				Result: json.RawMessage(`{"a":1e+21,"m":[2.5,null],"z":"<&>"}`),
			},
		},
		{
			name: "done without data", st: state(run.StatusDone, "/states/done", nil, nil),
			want: &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusDone, State: "/states/done", Time: 2000, Result: json.RawMessage(`null`)},
		},
		{
			name: "failed with an error", st: state(run.StatusFailed, "/states/work", map[string]any{"n": 1.0}, boom),
			want: &wire.Status{
				Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusFailed, State: "/states/work", Time: 2000,
				Error: &wire.RunError{Code: "JF2006", Path: "/nodes/x", Message: boom.Message},
			},
		},
		{
			// A cancel moves no clock in the state: the announcement has
			// the time.
			name: "cancelled", st: state(run.StatusCancelled, "/states/wait", nil, nil), announced: cancelled,
			want: cancelled,
		},
		{
			name: "cancelled, not yet announced", st: state(run.StatusCancelled, "/states/wait", nil, nil),
			want: &wire.Status{Run: "r1", Workflow: "wf", Revision: "v1", Status: wire.StatusCancelled, State: "/states/wait", Time: 2000},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data, err := run.Encode(c.st)
			if err != nil {
				t.Fatal(err)
			}
			rec := &runrecord.Record{State: data, Status: c.announced}
			for _, st := range []*run.State{c.st, nil} { // given, and decoded from the record
				got, err := StatusOf("r1", rec, st)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("StatusOf (state given: %t) = %+v\nwant %+v", st != nil, got, c.want)
				}
			}
		})
	}
}

// TestStatusOfAgreesWithTheAnnouncement: a state's own status is the one
// Render announces for it.
func TestStatusOfAgreesWithTheAnnouncement(t *testing.T) {
	t.Parallel()
	st := &run.State{Workflow: "wf", Revision: "v1", RunID: "r1", Status: run.StatusDone}
	st.Control.Active = []string{"/states/done"}
	st.Control.Time = 42
	st.Context.Data = map[string]any{"b": "x", "a": []any{1.0}}
	st.Context.Results, st.Context.Visits = map[string]any{}, map[string]any{}
	_, announced, err := Render(subjects.Must(""), testSigner, "r1", st, []run.Effect{
		{ID: "s", Settled: &run.Settled{Status: run.StatusDone, State: "/states/done", Result: st.Context.Data}},
	}, 42)
	if err != nil {
		t.Fatal(err)
	}
	data, err := run.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	own, err := StatusOf("r1", &runrecord.Record{State: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(own, announced) {
		t.Errorf("StatusOf = %+v\nRender announced %+v", own, announced)
	}
}

func TestStatusOfRefusesAnUndecodableState(t *testing.T) {
	t.Parallel()
	if _, err := StatusOf("r1", &runrecord.Record{State: json.RawMessage(`{"status":`)}, nil); err == nil {
		t.Error("StatusOf accepted a state that does not decode")
	}
}
