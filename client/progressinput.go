package client

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// What a record cannot tell about a step, the input it applied can: a
// failed attempt's error code and message as the worker sent them, and
// the output of an attempt whose activation ended with it.

// withResults completes the settle steps among steps from the task
// results rec applied since prev (nil for none), read through t.Result.
func (t *Tracker) withResults(steps []Progress, prev, rec *runrecord.Record) {
	if t.Result == nil {
		return
	}
	var results []*wire.Result
	read := false
	for i := range steps {
		s := &steps[i]
		if s.Kind != ProgressSettle {
			continue
		}
		if !read {
			read = true
			for _, seq := range rec.Applied {
				if prev == nil || !prev.HasApplied(seq) {
					if r := t.Result(seq); r != nil {
						results = append(results, r)
					}
				}
			}
		}
		i := slices.IndexFunc(results, func(r *wire.Result) bool { return r.Node == s.Node && r.Attempt == s.Attempt })
		if i < 0 {
			continue
		}
		r := results[i]
		switch {
		case r.Error != nil && !s.OK:
			caught := strings.HasSuffix(s.Detail, caughtMark)
			s.Code, s.Detail = r.Error.Code, r.Error.Message
			if caught {
				s.Detail += caughtMark
			}
		case r.Error == nil && s.OK && s.Detail == "" && len(r.Output) > 0:
			var v any
			if json.Unmarshal(r.Output, &v) == nil {
				s.Detail = compact(v)
			}
		}
	}
}

// refusals reports the inputs rec lists as ignored or rejected that no
// earlier record of this Tracker listed, in stream order.
func (t *Tracker) refusals(rec *runrecord.Record) []Progress {
	var out []Progress
	for verdict, list := range map[string][]runrecord.Rejection{"ignored": rec.Ignored, "rejected": rec.Rejected} {
		for _, r := range list {
			if r.Seq > t.refused {
				out = append(out, Progress{Kind: ProgressRefused, At: r.Time, Name: r.Kind, Detail: verdict + ": " + r.Reason, Seq: r.Seq})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Progress) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, p := range out {
		t.refused = max(t.refused, p.Seq)
	}
	return out
}

// unseen reports the task attempts whose results rec applied but whose
// settling no step reported: a watch delivers only the latest record, so
// a record that invoked a task and the one that applied its result can
// both be skipped. Each is reported invoked and settled, as its stored
// result says, before the steps the records show.
func (t *Tracker) unseen(steps []Progress, prev, rec *runrecord.Record, st *run.State, at float64) []Progress {
	if t.Result == nil {
		return nil
	}
	var out []Progress
	for _, seq := range rec.Applied {
		if prev != nil && prev.HasApplied(seq) {
			continue
		}
		r := t.Result(seq)
		if r == nil || slices.ContainsFunc(steps, func(s Progress) bool {
			return s.Kind == ProgressSettle && s.Node == r.Node && s.Attempt == r.Attempt
		}) {
			continue
		}
		state := activationState(r.Activation)
		inv := Progress{Kind: ProgressInvoke, At: at, State: state, Node: r.Node, Attempt: r.Attempt, Task: taskOf(t.wf, state, r.Node, nil)}
		inv.Name = nameOf(t.wf, inv)
		s := inv
		s.Kind = ProgressSettle
		if r.Error == nil {
			s.OK = true
			var v any
			if json.Unmarshal(r.Output, &v) == nil && len(r.Output) > 0 {
				s.Detail = compact(v)
			}
		} else {
			s.Code, s.Detail = r.Error.Code, r.Error.Message
			if st.Work != nil && st.Work.Activation == r.Activation && st.Work.Running[r.Node] != nil {
				s.Retry = true
			} else if _, ok := caughtBy(st, r.Node); ok {
				s.Detail += caughtMark
			}
		}
		out = append(out, inv, s)
	}
	return out
}

// activationState is the work state an activation id names: its second
// member, as in ["run","/states/pay",1]; "" when it names none.
func activationState(activation string) string {
	var parts []any
	if json.Unmarshal([]byte(activation), &parts) != nil || len(parts) < 2 {
		return ""
	}
	s, _ := parts[1].(string)
	return s
}
