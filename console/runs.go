package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/graph"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

type rawJSON = json.RawMessage

// statuses are the run statuses a filter may name.
var statuses = []string{wire.StatusRunning, wire.StatusWaiting, wire.StatusDone, wire.StatusFailed, wire.StatusCancelled, wire.StatusPaused, wire.StatusTerminated}

// overview is the header of every page.
type overview struct {
	Counts
	Actions bool `json:"actions"`
}

func (c *Console) apiOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, overview{Counts: c.idx.counts(), Actions: c.cfg.Actions})
}

// parseQuery reads a run list's filters; every bad one is named.
func (c *Console) parseQuery(r *http.Request) (Query, error) {
	v := r.URL.Query()
	q := Query{Status: v.Get("status"), Workflow: v.Get("workflow"), Search: strings.TrimSpace(v.Get("q")), Limit: c.cfg.PageSize}
	if q.Status != "" && !slices.Contains(statuses, q.Status) {
		return q, fmt.Errorf("status %q is not a run status (one of %s)", q.Status, strings.Join(statuses, ", "))
	}
	if strings.Contains(q.Search, "=") {
		// NAME=VALUE words: search attributes, which the run index answers.
		var err error
		if q.Where, err = client.ParseWhere(strings.Fields(q.Search)); err != nil {
			return q, fmt.Errorf("q %q: %w (search attributes are NAME=VALUE words, such as customer=c-7)", q.Search, err)
		}
		q.Search, q.Cursor = "", v.Get("before")
	} else if s := v.Get("before"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return q, fmt.Errorf("before %q is not a cursor (a positive integer from a page's next)", s)
		}
		q.Before = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageSize {
			return q, fmt.Errorf("limit %q must be a whole number from 1 to %d", s, MaxPageSize)
		}
		q.Limit = n
	}
	if len(q.Search) > subjects.MaxToken {
		return q, fmt.Errorf("q is longer than a run id can be (%d bytes)", subjects.MaxToken)
	}
	return q, nil
}

func (c *Console) apiRuns(w http.ResponseWriter, r *http.Request) {
	q, err := c.parseQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var p Page
	if q.Where != nil {
		if p, err = c.whereRuns(r.Context(), q); err != nil {
			writeError(w, whereStatus(err), err.Error())
			return
		}
	} else {
		p = c.idx.query(q)
	}
	c.fillStarted(r.Context(), p.Runs)
	writeJSON(w, http.StatusOK, p)
}

// fillStarted learns the start times a page lacks from the runs' start
// messages (one direct get each, remembered in the index).
func (c *Console) fillStarted(ctx context.Context, runs []Summary) {
	var stream jetstream.Stream
	for i := range runs {
		if runs[i].Started != 0 {
			continue
		}
		if stream == nil {
			var err error
			if stream, err = c.cfg.JS.Stream(ctx, c.cfg.Names.InputStream()); err != nil {
				return
			}
		}
		m, err := kvstore.LastStart(ctx, stream, c.cfg.Names, runs[i].ID)
		ms := int64(-1) // the start message is gone: do not ask again
		switch {
		case err == nil:
			ms = m.Time.UnixMilli()
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		}
		runs[i].Started = ms
		c.idx.setStarted(runs[i].ID, ms)
	}
}

// runView is everything the run page shows but the history.
type runView struct {
	Summary
	Input    any                   `json:"input"`
	Data     any                   `json:"data"`
	Result   rawJSON               `json:"result,omitempty"`
	Failure  *run.Failure          `json:"failure,omitempty"`
	Active   []string              `json:"active"`
	Visits   map[string]any        `json:"visits"`
	Event    *run.Event            `json:"event,omitempty"`
	Pending  *pendingView          `json:"pending,omitempty"`
	Buffered []run.Event           `json:"buffered,omitempty"`
	Rejected []runrecord.Rejection `json:"rejected,omitempty"`
	Outbox   int                   `json:"outbox"`
	// Awaiting are the events the active state waits for.
	Awaiting []awaitView `json:"awaiting,omitempty"`
	// Chart is the statechart as SVG, the run marked on it.
	Chart      string      `json:"chart"`
	WorkStates []workState `json:"workStates"`
	DAG        *dagView    `json:"dag,omitempty"`
	Commands   commands    `json:"commands"`
	Actions    bool        `json:"actions"`
	Generation int64       `json:"generation"`
	Seq        int64       `json:"seq"`
	// CaughtError is the failure a catch recovered from, while the run's
	// data is still that error (a run done through its catch).
	CaughtError *caughtView `json:"caughtError,omitempty"`
}

type pendingView struct {
	State      string                  `json:"state"`
	Visit      int64                   `json:"visit"`
	Activation string                  `json:"activation,omitempty"`
	Running    map[string]*run.Attempt `json:"running,omitempty"`
}

// caughtView is a caught failure and where the run caught it.
type caughtView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// State is the work state whose catch was taken, Node its DAG node
	// that failed and Task that node's task@version ("" when unknown).
	State string `json:"state,omitempty"`
	Node  string `json:"node,omitempty"`
	Task  string `json:"task,omitempty"`
}

// caughtOf says what failure the run's data holds from a catch, and
// which work state's catch recorded it; nil when the data is no caught
// failure.
func caughtOf(wf *workflow.Workflow, st *run.State) *caughtView {
	c := run.CaughtIn(st.Context.Data)
	if c == nil {
		return nil
	}
	v := &caughtView{Code: c.Code, Message: c.Message, Node: c.Node}
	for _, id := range wf.Lowered.Work {
		if s := wf.Spec(id); s == nil || s.Catch == "" {
			continue
		}
		if r := run.CaughtIn(st.Context.Results[id]); r != nil && *r == *c {
			v.State = id
			if info, ok := wf.DAGs[id].Node(c.Node); ok && info.Task != "" {
				v.Task = info.Task + "@" + info.Version
			}
			break
		}
	}
	return v
}

type awaitView struct {
	Event string `json:"event"`
	Guard any    `json:"guard,omitempty"`
	To    string `json:"to"`
}

// loaded is a run read from the bucket with its definition.
type loaded struct {
	rec *runrecord.Record
	st  *run.State
	def *definition
	rev uint64
	sum Summary
}

func (c *Console) load(ctx context.Context, id string) (*loaded, error) {
	if err := subjects.CheckRunID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	data, rev, err := c.cfg.Runs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, err
	}
	st, err := step.DecodeState(rec)
	if err != nil {
		return nil, err
	}
	def, err := c.defs.get(ctx, st.Workflow, st.Revision)
	if err != nil {
		return nil, fmt.Errorf("run %s is pinned to workflow %q revision %q: %w", id, st.Workflow, st.Revision, err)
	}
	l := &loaded{rec: rec, st: st, def: def, rev: rev}
	if s, ok := c.idx.get(id); ok && s.Rev == rev {
		l.sum = s
	} else if s, ok := summarize(id, data, rev, timeNow()); ok {
		l.sum = *s
		if old, ok := c.idx.get(id); ok {
			l.sum.Started, l.sum.Updated = old.Started, old.Updated
		}
	}
	runs := []Summary{l.sum}
	c.fillStarted(ctx, runs)
	l.sum = runs[0]
	return l, nil
}

func (c *Console) apiRun(w http.ResponseWriter, r *http.Request) {
	l, err := c.load(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	st, wf := l.st, l.def.wf
	v := runView{
		Summary: l.sum, Input: st.Context.Input, Data: st.Context.Data, Failure: st.Error,
		Active: st.Control.Active, Visits: st.Context.Visits, Event: st.Context.Event, Buffered: st.Buffered,
		Rejected: l.rec.Rejected, Outbox: len(l.rec.Outbox), Actions: c.cfg.Actions,
		Generation: st.Generation, Seq: st.Seq,
	}
	if v.Active == nil {
		v.Active = []string{}
	}
	if st.Status == run.StatusDone {
		ws, err := step.StatusOf(l.sum.ID, l.rec, st)
		if err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
		v.Result = ws.Result
	}
	v.CaughtError = caughtOf(wf, st)
	// A run that ended has nothing in flight: its failed activation's
	// nodes are marked on the DAG, and a redrive is in the actions.
	if p := st.Pending; p != nil && !st.Status.Terminal() {
		v.Pending = &pendingView{State: p.State, Visit: p.Visit}
		if st.Work != nil {
			v.Pending.Activation, v.Pending.Running = st.Work.Activation, st.Work.Running
		}
	}
	if st.Status == run.StatusWaiting && len(st.Control.Active) > 0 {
		if s := wf.Spec(st.Control.Active[0]); s != nil && s.Kind == workflow.KindOn {
			for _, on := range s.On {
				a := awaitView{Event: on.Event, To: stateLabel(on.To)}
				if on.HasGuard {
					a.Guard = on.Guard
				}
				v.Awaiting = append(v.Awaiting, a)
			}
		}
	}
	marks := graph.RunMarks(st)
	d := graph.Statechart(wf, marks)
	d.Title = st.Workflow + " " + st.Revision
	v.Chart = d.SVG(graph.SVGOptions{IDPrefix: "chart"})
	v.WorkStates = workStates(wf, marks.Visits)
	if state := dagState(wf, st, r.URL.Query().Get("state")); state != "" {
		if v.DAG, err = dagOf(wf, stateLabel(state), state, graph.RunDAGMarks(wf, st, state)); err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
	}
	v.Commands = c.commandsFor(l.sum.ID, v.Awaiting)
	writeJSON(w, http.StatusOK, v)
}

// dagState is the work state whose DAG a run page shows: the one asked
// for, else the active one, else the last work state the run completed.
func dagState(wf *workflow.Workflow, st *run.State, asked string) string {
	if asked != "" {
		return asked
	}
	if len(st.Control.Active) > 0 && wf.DAGs[st.Control.Active[0]] != nil {
		return st.Control.Active[0]
	}
	if st.Pending != nil && wf.DAGs[st.Pending.State] != nil {
		return st.Pending.State
	}
	return ""
}

func (c *Console) apiRunDAG(w http.ResponseWriter, r *http.Request) {
	l, err := c.load(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	state := r.URL.Query().Get("state")
	v, err := dagOf(l.def.wf, stateLabel(state), state, graph.RunDAGMarks(l.def.wf, l.st, state))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// stateLabel is a state id as people read it: /states/a/flow/states/b is
// a › b.
func stateLabel(id string) string {
	rest, ok := strings.CutPrefix(id, "/states/")
	if !ok {
		return id
	}
	parts := strings.Split(rest, "/flow/states/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return strings.Join(parts, " › ")
}
