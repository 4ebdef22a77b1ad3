package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// StartRequest is the body of POST /api/v1/runs.
type StartRequest struct {
	// Workflow is the deployed workflow's name. Required.
	Workflow string `json:"workflow"`
	// ID is the run id; empty, the gateway makes one ("run-" and 16
	// random characters). A start for an id that already has a run
	// changes nothing: give your business key to make a start safe to
	// repeat.
	ID string `json:"id,omitempty"`
	// Revision pins a deployed revision; empty is the latest.
	Revision string `json:"revision,omitempty"`
	// Input is the run input; absent is null.
	Input json.RawMessage `json:"input,omitempty"`
	// Priority, 0 to 9, is the run's priority, which its task
	// invocations inherit where their task version's policy queues them
	// (docs/POLICY.md#priority-and-fairness); absent: the policy's.
	Priority *int `json:"priority,omitempty"`
	// Event is delivered in the start's own step (signal with start).
	Event *StartEvent `json:"event,omitempty"`
	// IdempotencyKey makes the start safe to repeat within the
	// idempotency window (24 h): a start with a key seen before starts
	// nothing new and answers the run the first one started. Also read
	// from the Idempotency-Key header.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Singleton allows one active (not settled) run per key: while
	// another run started with it has not settled, the start is refused
	// (409 SINGLETON_ACTIVE), or with SingletonMode "queue" held until
	// that run settles.
	Singleton string `json:"singleton,omitempty"`
	// SingletonMode is "refuse" (the default) or "queue".
	SingletonMode string `json:"singletonMode,omitempty"`
	// Debounce holds the start for debounce.ms: a later start with the
	// same debounce.key within it replaces this one.
	Debounce *wire.Debounce `json:"debounce,omitempty"`
}

// StartEvent is a start's event.
type StartEvent struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// ID de-duplicates the event as an event's id does.
	ID string `json:"id,omitempty"`
}

// Started is the answer to a start that does not wait (202).
type Started struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow"`
	// Seq is the start's sequence in the input stream.
	Seq uint64 `json:"seq,omitempty"`
	// Duplicate says the idempotency key named an earlier start: Run is
	// its run, and nothing new was started.
	Duplicate bool `json:"duplicate,omitempty"`
	// Decision is what the dispatchers decided on a start with controls
	// that did not start its run at once: duplicate, queued, debounced,
	// replaced, or pending when none decided within the request's time.
	Decision string `json:"decision,omitempty"`
	// Because is the run a queued start waits for (the singleton key's
	// active run), or the later run that replaced a debounced one.
	Because string `json:"because,omitempty"`
	// Due is when a debounced start starts, Unix milliseconds.
	Due float64 `json:"due,omitempty"`
}

func newRunID() string { return "run-" + strings.ToLower(rand.Text()[:16]) }

// start is POST /api/v1/runs[?wait=D].
func (g *Gateway) start(w http.ResponseWriter, r *http.Request) {
	wait, e := g.waitParam(r, "wait", 0)
	if e != nil {
		writeError(w, e)
		return
	}
	acts := []action{actStart}
	if wait > 0 {
		acts = append(acts, actRead)
	}
	if _, e := g.authorize(r, acts...); e != nil {
		writeError(w, e)
		return
	}
	var req StartRequest
	if e := g.decodeObject(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = r.Header.Get("Idempotency-Key")
	}
	if e := g.checkStart(r.Context(), &req); e != nil {
		writeError(w, e)
		return
	}
	opts, e := startOptions(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	controlled := len(opts) > 0
	if req.Revision != "" {
		opts = append(opts, client.WithRevision(req.Revision))
	}
	if req.Priority != nil {
		opts = append(opts, client.WithPriority(*req.Priority))
	}
	input := req.Input
	if input == nil {
		input = json.RawMessage("null")
	}
	ctx, cancel := opContext(r)
	defer cancel()
	var mark uint64
	var err error
	if controlled {
		if mark, err = g.client.DecisionMark(ctx, req.ID); err != nil {
			g.natsError(w, r, "start "+req.ID, err)
			return
		}
	}
	var seq uint64
	switch {
	case req.Event != nil:
		var payload any
		if req.Event.Payload != nil {
			payload = req.Event.Payload
		}
		seq, err = g.client.StartWithEvent(ctx, req.Workflow, req.ID, input, req.Event.Type, payload, req.Event.ID, opts...)
	default:
		err = g.client.StartRun(ctx, req.Workflow, req.ID, input, opts...)
	}
	if err != nil {
		g.natsError(w, r, "start "+req.ID, err)
		return
	}
	ans := Started{Run: req.ID, Workflow: req.Workflow, Seq: seq}
	if controlled && g.awaitStart(ctx, w, r, &req, mark, &ans) {
		return
	}
	if wait == 0 || ans.Decision == "replaced" {
		writeJSON(w, http.StatusAccepted, ans)
		return
	}
	g.waitFor(w, r, ans.Run, wait)
}

// checkStart checks a start's members, naming the one at fault, and fills
// in a missing id.
func (g *Gateway) checkStart(ctx context.Context, req *StartRequest) *Error {
	if req.Workflow == "" {
		return invalid("/workflow", "workflow is required: the name of a deployed workflow")
	}
	if err := subjects.CheckWorkflowName(req.Workflow); err != nil {
		return invalid("/workflow", err.Error())
	}
	if req.ID == "" {
		req.ID = newRunID()
	} else if err := subjects.CheckRunID(req.ID); err != nil {
		return invalid("/id", err.Error())
	}
	if req.Event != nil {
		if err := subjects.CheckEventType(req.Event.Type); err != nil {
			return invalid("/event/type", err.Error())
		}
	}
	if req.Priority != nil && (*req.Priority < wire.MinPriority || *req.Priority > wire.MaxPriority) {
		return invalid("/priority", fmt.Sprintf("priority must be an integer from %d to %d, not %d", wire.MinPriority, wire.MaxPriority, *req.Priority))
	}
	if g.cfg.Registry == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var err error
	pointer := "/workflow"
	if req.Revision != "" {
		_, err = g.cfg.Registry.GetRevision(ctx, req.Workflow, req.Revision)
		pointer = "/revision"
	} else {
		_, err = g.cfg.Registry.Get(ctx, req.Workflow)
	}
	switch {
	case errors.Is(err, registry.ErrWorkflowNotFound):
		return &Error{Status: http.StatusNotFound, Code: CodeWorkflowUnknown, Message: err.Error() + " (jetflow deploy stores it)", Pointer: pointer}
	case err != nil:
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "reading the deployment: " + err.Error()}
	}
	return nil
}

// result is GET /api/v1/runs/{run}/result?wait=D: the run's status once it
// settles, waiting up to D (default 30s).
func (g *Gateway) result(w http.ResponseWriter, r *http.Request) {
	wait, e := g.waitParam(r, "wait", min(30*time.Second, g.cfg.MaxWait))
	if e != nil {
		writeError(w, e)
		return
	}
	id, ok := g.runRequest(w, r, actRead)
	if !ok {
		return
	}
	g.waitFor(w, r, id, wait)
}

// waitFor answers the run's status once it settles (200), or NOT_SETTLED
// (504) naming the run and its status when wait passes first.
func (g *Gateway) waitFor(w http.ResponseWriter, r *http.Request, id string, wait time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	st, err := g.client.Wait(ctx, id)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, st)
		return
	case errors.Is(err, runrecord.ErrRemoved):
		writeError(w, &Error{Status: http.StatusGone, Code: CodeRunRemoved, Message: err.Error(), Run: id})
		return
	case r.Context().Err() != nil:
		return // the caller left
	case ctx.Err() == nil:
		g.natsError(w, r, "wait for "+id, err)
		return
	}
	e := &Error{
		Status: http.StatusGatewayTimeout, Code: CodeNotSettled, Run: id,
		Message: fmt.Sprintf("run %s has not settled within %s; GET %sruns/%s/result?wait=… waits again", id, wait, Prefix, id),
	}
	rctx, rcancel := opContext(r)
	defer rcancel()
	if st, err := g.client.Status(rctx, id); err == nil {
		e.Detail = st
		e.Message = fmt.Sprintf("run %s has not settled within %s: it is %s; GET %sruns/%s/result?wait=… waits again", id, wait, st.Status, Prefix, id)
	} else if errors.Is(err, client.ErrRunNotFound) {
		e.Message = fmt.Sprintf("run %s has no record after %s: its start was not applied (is a dispatcher running, is the workflow deployed?)", id, wait)
	}
	writeError(w, e)
}

// runRequest authorizes act and reads the request's run id; when either
// fails it has answered the request.
func (g *Gateway) runRequest(w http.ResponseWriter, r *http.Request, act action) (string, bool) {
	if _, e := g.authorize(r, act); e != nil {
		writeError(w, e)
		return "", false
	}
	id, e := runParam(r)
	if e != nil {
		writeError(w, e)
		return "", false
	}
	return id, true
}

func runParam(r *http.Request) (string, *Error) {
	id := r.PathValue("run")
	if err := subjects.CheckRunID(id); err != nil {
		return "", &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: err.Error(), Pointer: "path:run"}
	}
	return id, nil
}

// status is GET /api/v1/runs/{run}.
func (g *Gateway) status(w http.ResponseWriter, r *http.Request) {
	id, ok := g.runRequest(w, r, actRead)
	if !ok {
		return
	}
	ctx, cancel := opContext(r)
	defer cancel()
	st, err := g.client.Status(ctx, id)
	if e := g.statusError(id, err); e != nil {
		if e.Code == CodeUnavailable {
			g.natsError(w, r, "status of "+id, err)
			return
		}
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// statusError maps a failed status read.
func (g *Gateway) statusError(id string, err error) *Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runrecord.ErrRemoved):
		return &Error{Status: http.StatusGone, Code: CodeRunRemoved, Message: err.Error(), Run: id}
	case errors.Is(err, client.ErrRunNotFound):
		return &Error{Status: http.StatusNotFound, Code: CodeRunNotFound, Message: fmt.Sprintf("run %s has no record: it was never started, or its start is not applied yet", id), Run: id, Pointer: "path:run"}
	}
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: err.Error()}
}

// exists answers the error for a run that has no record, unless the
// request says beforeStart=true.
func (g *Gateway) exists(r *http.Request, id string) *Error {
	if b := r.URL.Query().Get("beforeStart"); b != "" {
		v, err := strconv.ParseBool(b)
		if err != nil {
			return invalid("query:beforeStart", fmt.Sprintf("beforeStart=%q is not true or false", b))
		}
		if v {
			return nil
		}
	}
	ctx, cancel := opContext(r)
	defer cancel()
	_, err := g.client.Status(ctx, id)
	if e := g.statusError(id, err); e != nil {
		if e.Code == CodeRunNotFound {
			e.Message += " (beforeStart=true sends anyway)"
		}
		return e
	}
	return nil
}

// Sent is the answer to an event or a cancel (202).
type Sent struct {
	Run string `json:"run"`
	// Seq is the input's sequence in the input stream: the run's record
	// lists it among what it applied, ignored or rejected.
	Seq uint64 `json:"seq,omitempty"`
}

// event is POST /api/v1/runs/{run}/events/{type}[?id=ID&beforeStart=true];
// the body is the payload, an empty body the payload null.
func (g *Gateway) event(w http.ResponseWriter, r *http.Request) {
	id, ok := g.runRequest(w, r, actEvent)
	if !ok {
		return
	}
	typ := r.PathValue("type")
	if err := subjects.CheckEventType(typ); err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: err.Error(), Pointer: "path:type"})
		return
	}
	data, e := g.readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	payload := json.RawMessage("null")
	if len(strings.TrimSpace(string(data))) > 0 {
		if !json.Valid(data) {
			writeError(w, invalid("/", "the body is the event's payload and must be one JSON value"))
			return
		}
		payload = data
	}
	var opts []client.EventOption
	if eid := r.URL.Query().Get("id"); eid != "" {
		opts = append(opts, client.EventID(eid))
	}
	if e := g.exists(r, id); e != nil {
		writeError(w, e)
		return
	}
	var seq uint64
	opts = append(opts, client.EventSeq(&seq))
	ctx, cancel := opContext(r)
	defer cancel()
	if err := g.client.SendEvent(ctx, id, typ, payload, opts...); err != nil {
		g.natsError(w, r, "event to "+id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, Sent{Run: id, Seq: seq})
}

// CancelRequest is the body of POST /api/v1/runs/{run}/cancel (optional).
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// cancel is POST /api/v1/runs/{run}/cancel.
func (g *Gateway) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := g.runRequest(w, r, actCancel)
	if !ok {
		return
	}
	var req CancelRequest
	if e := g.decodeObject(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := g.exists(r, id); e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := opContext(r)
	defer cancel()
	if err := g.client.Cancel(ctx, id, req.Reason); err != nil {
		g.natsError(w, r, "cancel of "+id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, Sent{Run: id})
}

// Page is the answer to GET /api/v1/runs.
type Page struct {
	Runs []*wire.Status `json:"runs"`
	// Next is the cursor of the next page (?cursor=), absent on the last.
	Next string `json:"next,omitempty"`
}

// maxList caps a page.
const maxList = 1000

// list is GET /api/v1/runs?workflow=&status=&revision=&state=&startedAfter=&startedBefore=&match=&sort=&limit=&cursor=.
func (g *Gateway) list(w http.ResponseWriter, r *http.Request) {
	if _, e := g.authorize(r, actRead); e != nil {
		writeError(w, e)
		return
	}
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "workflow", "status", "revision", "state", "startedAfter", "startedBefore", "match", "sort", "limit", "cursor":
		default:
			writeError(w, invalid("query:"+name, fmt.Sprintf("unknown parameter %q (workflow, status, revision, state, startedAfter, startedBefore, match, sort, limit, cursor)", name)))
			return
		}
	}
	opts := client.ListOptions{
		Filter: wire.RunFilter{
			Workflow: q.Get("workflow"), Status: q.Get("status"), Revision: q.Get("revision"), State: q.Get("state"),
			StartedAfter: q.Get("startedAfter"), StartedBefore: q.Get("startedBefore"),
		},
		Sort: q.Get("sort"), Cursor: q.Get("cursor"), Limit: 100, Full: true,
	}
	if m := q.Get("match"); m != "" {
		if !json.Valid([]byte(m)) {
			writeError(w, invalid("query:match", "match must be a JSON query such as {\"$gt\":[\"$.input.qty\",1]}"))
			return
		}
		opts.Filter.Match = json.RawMessage(m)
	}
	if e := filterError(opts.Filter); e != nil {
		writeError(w, e)
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxList {
			writeError(w, invalid("query:limit", fmt.Sprintf("limit=%q must be a whole number from 1 to %d", l, maxList)))
			return
		}
		opts.Limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	page, err := g.client.ListRuns(ctx, opts)
	if errors.Is(err, client.ErrBadFilter) {
		writeError(w, invalid("query", err.Error()))
		return
	}
	if err != nil {
		g.natsError(w, r, "list", err)
		return
	}
	out := Page{Runs: make([]*wire.Status, 0, len(page.Runs)), Next: page.Next}
	for _, l := range page.Runs {
		out.Runs = append(out.Runs, l.Status)
	}
	writeJSON(w, http.StatusOK, out)
}

// filterError checks each member of f alone, so that a refusal names the
// query parameter at fault.
func filterError(f wire.RunFilter) *Error {
	fields := []struct {
		name string
		f    wire.RunFilter
	}{
		{"workflow", wire.RunFilter{Workflow: f.Workflow}},
		{"startedAfter", wire.RunFilter{StartedAfter: f.StartedAfter}},
		{"startedBefore", wire.RunFilter{StartedBefore: f.StartedBefore}},
		{"match", wire.RunFilter{Match: f.Match}},
	}
	if f.Status != wire.StatusRemoved {
		fields = append(fields, struct {
			name string
			f    wire.RunFilter
		}{"status", wire.RunFilter{Status: f.Status}})
	}
	for _, c := range fields {
		if _, err := client.CompileFilter(c.f); err != nil {
			return invalid("query:"+c.name, err.Error())
		}
	}
	return nil
}
