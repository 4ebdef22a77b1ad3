package step

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
)

// Each arming of a timer gets a schedule subject of its own, which the
// record remembers; disarms and re-arms name the pending instance, and
// schedules from before instances keep their subject.
func TestPlaceTimers(t *testing.T) {
	t.Parallel()
	n := subjects.Must("p")
	running := func(seq int64, deadline float64, retries ...string) *run.State {
		st := &run.State{RunID: "r", Seq: seq, Status: run.StatusRunning, Deadline: deadline, Work: &run.Work{Retries: map[string]string{}}}
		for _, id := range retries {
			st.Work.Retries[id] = "node"
		}
		return st
	}
	waiting := func(seq int64, tokens ...int64) *run.State {
		st := &run.State{RunID: "r", Seq: seq, Status: run.StatusWaiting}
		for _, tok := range tokens {
			st.Control.Timers = append(st.Control.Timers, statechart.Timer{Token: tok, At: 1000})
		}
		return st
	}
	effect := 0
	arm := func(id string) runrecord.Outgoing {
		effect++
		return runrecord.Outgoing{ID: "r/e" + strconv.Itoa(effect), Kind: runrecord.OutTimer, Subject: n.Schedule("r", id), Header: map[string]string{"Jetflow-Timer": id}}
	}
	disarm := func(id string) runrecord.Outgoing {
		effect++
		return runrecord.Outgoing{ID: "r/e" + strconv.Itoa(effect), Kind: runrecord.OutDisarm, Subject: n.Schedule("r", id), Header: map[string]string{"Jetflow-Timer": id}}
	}
	type sent struct{ kind, subject string }
	for _, c := range []struct {
		name       string
		armed      map[string]int64
		prev, next *run.State
		out        []runrecord.Outgoing
		fired      string // the fire the step applies
		want       []sent
		wantArmed  map[string]int64
		wantLoose  bool
	}{
		{
			name: "first arm", prev: nil, next: waiting(1, 1),
			out:  []runrecord.Outgoing{arm("t1")},
			want: []sent{{runrecord.OutTimer, "p.sched.r.t1.1"}}, wantArmed: map[string]int64{"t1": 1},
		},
		{
			name: "deadline moves", armed: map[string]int64{"d": 3}, prev: running(4, 100), next: running(5, 200),
			out:  []runrecord.Outgoing{arm("d")},
			want: []sent{{runrecord.OutDisarm, "p.sched.r.d.3"}, {runrecord.OutTimer, "p.sched.r.d.5"}}, wantArmed: map[string]int64{"d": 5},
		},
		{
			name: "deadline dropped, retry armed", armed: map[string]int64{"d": 3}, prev: running(4, 100), next: running(5, 0, "r1"),
			out:  []runrecord.Outgoing{arm("r1"), disarm("d")},
			want: []sent{{runrecord.OutTimer, "p.sched.r.r1.5"}, {runrecord.OutDisarm, "p.sched.r.d.3"}}, wantArmed: map[string]int64{"r1": 5},
		},
		{
			name: "retry fired, deadline armed again", armed: map[string]int64{"r1": 5}, prev: running(5, 0, "r1"), next: running(6, 300),
			out: []runrecord.Outgoing{arm("d")}, fired: "p.sched.r.r1.5",
			want: []sent{{runrecord.OutTimer, "p.sched.r.d.6"}}, wantArmed: map[string]int64{"d": 6},
		},
		{
			name: "moved twice in one step", armed: map[string]int64{"d": 3}, prev: running(4, 100), next: running(9, 300),
			out:       []runrecord.Outgoing{arm("d"), arm("d")},
			want:      []sent{{runrecord.OutDisarm, "p.sched.r.d.3"}, {runrecord.OutTimer, "p.sched.r.d.9"}, {runrecord.OutTimer, "p.sched.r.d.9"}},
			wantArmed: map[string]int64{"d": 9},
		},
		{
			name: "resume arms again", armed: map[string]int64{"t1": 2}, prev: waiting(4, 1), next: waiting(5, 1),
			out:  []runrecord.Outgoing{arm("t1")},
			want: []sent{{runrecord.OutDisarm, "p.sched.r.t1.2"}, {runrecord.OutTimer, "p.sched.r.t1.5"}}, wantArmed: map[string]int64{"t1": 5},
		},
		{
			name: "paused keeps its instances", armed: map[string]int64{"t1": 2}, prev: waiting(4, 1),
			next: &run.State{RunID: "r", Seq: 5, Status: run.StatusPaused, Control: waiting(5, 1).Control},
			want: []sent{}, wantArmed: map[string]int64{"t1": 2},
		},
		{
			name: "settled forgets them", armed: map[string]int64{"t1": 2, "d": 3}, prev: waiting(4, 1),
			next: &run.State{RunID: "r", Seq: 5, Status: run.StatusDone},
			want: []sent{}, wantArmed: nil, wantLoose: true,
		},
		{
			name: "settled by its timer's fire", armed: map[string]int64{"t1": 2}, prev: waiting(4, 1),
			next: &run.State{RunID: "r", Seq: 5, Status: run.StatusDone}, fired: "p.sched.r.t1.2",
			want: []sent{}, wantArmed: nil,
		},
		{
			name: "settled by a fire of an older instance", armed: map[string]int64{"t1": 3}, prev: waiting(4, 1),
			next: &run.State{RunID: "r", Seq: 5, Status: run.StatusDone}, fired: "p.sched.r.t1.2",
			want: []sent{}, wantArmed: nil, wantLoose: true,
		},
		{
			name: "settled by a fire, another timer left pending", armed: map[string]int64{"t1": 2, "t2": 2}, prev: waiting(4, 1, 2),
			next: &run.State{RunID: "r", Seq: 5, Status: run.StatusDone}, fired: "p.sched.r.t1.2",
			want: []sent{}, wantArmed: nil, wantLoose: true,
		},
		{
			name: "armed and left in one step", prev: waiting(4), next: waiting(5),
			out:  []runrecord.Outgoing{arm("t1")},
			want: []sent{{runrecord.OutTimer, "p.sched.r.t1.5"}}, wantArmed: nil, wantLoose: true,
		},
		{
			name: "legacy deadline moves", prev: running(4, 100), next: running(5, 200),
			out:  []runrecord.Outgoing{arm("d")},
			want: []sent{{runrecord.OutDisarm, "p.sched.r.d"}, {runrecord.OutTimer, "p.sched.r.d.5"}}, wantArmed: map[string]int64{"d": 5},
		},
		{
			name: "legacy deadline dropped", prev: running(4, 100), next: running(5, 0),
			out:  []runrecord.Outgoing{disarm("d")},
			want: []sent{{runrecord.OutDisarm, "p.sched.r.d"}}, wantArmed: nil,
		},
		{
			name: "legacy deadline dropped and armed again", prev: running(4, 100), next: running(5, 200),
			out:  []runrecord.Outgoing{disarm("d"), arm("d")},
			want: []sent{{runrecord.OutDisarm, "p.sched.r.d"}, {runrecord.OutTimer, "p.sched.r.d.5"}}, wantArmed: map[string]int64{"d": 5},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := maps.Clone(c.armed)
			out, armed, loose := placeTimers(n, "r", c.fired, c.armed, c.prev, c.next, c.out)
			if loose != c.wantLoose {
				t.Errorf("loose %v, want %v", loose, c.wantLoose)
			}
			got := []sent{}
			ids := map[string]bool{}
			for _, o := range out {
				got = append(got, sent{o.Kind, o.Subject})
				if ids[o.ID] {
					t.Errorf("message id %q twice", o.ID)
				}
				ids[o.ID] = true
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("outbox %v, want %v", got, c.want)
			}
			if !maps.Equal(armed, c.wantArmed) || (armed == nil) != (c.wantArmed == nil) {
				t.Errorf("armed %v, want %v", armed, c.wantArmed)
			}
			if !maps.Equal(c.armed, before) {
				t.Errorf("the previous record's instances changed to %v", c.armed)
			}
		})
	}
}
