package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/wire"
)

// Bulk actions: an operation over every run a filter matches, carried
// out by the dispatchers as a bulk job (package bulk), exactly as
// `jetflow cancel --workflow … --yes` submits one. The page counts
// first (a scan of the run bucket, as the CLI's count), shows the
// equivalent command, then submits and follows the job.

// bulkRequest is the body of a count and of a submission.
type bulkRequest struct {
	Operation string         `json:"operation"`
	Reason    string         `json:"reason"`
	Filter    wire.RunFilter `json:"filter"`
	// Revision is the deployed revision a migrate moves runs to (`jetflow
	// migrate --to`), and goes with that operation only.
	Revision string `json:"revision,omitempty"`
}

// bulkCount is what a count answers: how many runs match and can take
// the operation now, the filter with its times resolved (submit that one)
// and the equivalent command.
type bulkCount struct {
	Matched  int            `json:"matched"`
	Eligible int            `json:"eligible"`
	Filter   wire.RunFilter `json:"filter"`
	Command  string         `json:"command"`
}

// checkBulk reads and checks a count or submission: a known operation, a
// reason where one is required, a filter with at least one field that
// compiles. Times may be RFC 3339 or a duration ago ("2h"), resolved here.
func (c *Console) checkBulk(w http.ResponseWriter, r *http.Request) (*bulkRequest, bool) {
	var req bulkRequest
	if !c.checkAction(w, r, &req) {
		return nil, false
	}
	bad := func(msg string) (*bulkRequest, bool) {
		writeError(w, http.StatusBadRequest, msg)
		return nil, false
	}
	if _, ok := client.Operations[req.Operation]; !ok {
		return bad(fmt.Sprintf("operation %q is not a bulk operation (one of %s)", req.Operation, strings.Join(client.OperationNames(), ", ")))
	}
	if req.Operation == "terminate" && strings.TrimSpace(req.Reason) == "" {
		return bad("a bulk terminate needs a reason: say why the runs are ended")
	}
	req.Revision = strings.TrimSpace(req.Revision)
	if req.Operation == client.OpMigrate && req.Revision == "" {
		return bad("a migrate needs the revision to move the runs to (revision): a deployed revision of their workflow")
	}
	if req.Operation != client.OpMigrate && req.Revision != "" {
		return bad(fmt.Sprintf("revision %q goes with operation %s only (the filter's revision selects runs by the revision they are on)", req.Revision, client.OpMigrate))
	}
	f := &req.Filter
	if isEmptyFilter(*f) {
		return bad("choose a filter (workflow, revision, status, state, start times or match): a bulk job needs at least one, as the command's filter flags do")
	}
	now := timeNow()
	var err error
	if f.StartedBefore, err = resolveTime("startedBefore", f.StartedBefore, now); err != nil {
		return bad(err.Error())
	}
	if f.StartedAfter, err = resolveTime("startedAfter", f.StartedAfter, now); err != nil {
		return bad(err.Error())
	}
	if _, err := client.CompileFilter(*f); err != nil {
		return bad(err.Error())
	}
	if req.Revision != "" && f.Workflow != "" {
		// A revision that is not deployed would fail at every run.
		if _, err := c.cfg.Registry.GetRevision(r.Context(), f.Workflow, req.Revision); err != nil {
			if statusOf(err) == http.StatusNotFound {
				return bad(fmt.Sprintf("revision %q of workflow %s is not deployed: migrate moves runs onto a deployed revision (jetflow deploy)", req.Revision, f.Workflow))
			}
			writeError(w, http.StatusBadGateway, err.Error())
			return nil, false
		}
	}
	return &req, true
}

func isEmptyFilter(f wire.RunFilter) bool {
	return f.Workflow == "" && f.Revision == "" && f.Status == "" && f.State == "" &&
		f.StartedBefore == "" && f.StartedAfter == "" && len(f.Match) == 0 && len(f.Where) == 0 && len(f.Runs) == 0
}

// resolveTime reads an RFC 3339 time, or a duration meaning that long
// before now, as the command's --started-before and --started-after do.
func resolveTime(field, v string, now time.Time) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", fmt.Errorf("%s %q is neither an RFC 3339 time (2026-12-01T10:00:00Z) nor a duration (90m)", field, v)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// bulkCommand is the jetflow command that submits the same job; to is
// a migrate's revision ("" for the other operations).
func (c *Console) bulkCommand(op, to, reason string, f wire.RunFilter) string {
	args := []string{"jetflow", op}
	flag := func(name, v string) {
		if v != "" {
			args = append(args, "--"+name, shellQuote(v))
		}
	}
	flag("to", to)
	flag("workflow", f.Workflow)
	flag("revision", f.Revision)
	flag("status", f.Status)
	flag("state", f.State)
	flag("started-before", f.StartedBefore)
	flag("started-after", f.StartedAfter)
	flag("match", string(f.Match))
	for _, name := range slices.Sorted(maps.Keys(f.Where)) {
		flag("where", name+"="+f.Where[name])
	}
	flag("run", strings.Join(f.Runs, ","))
	flag("reason", reason)
	args = append(args, "--yes")
	if fl := c.connFlags(); fl != "" {
		args = append(args, fl)
	}
	return strings.Join(args, " ")
}

func (c *Console) apiBulkCount(w http.ResponseWriter, r *http.Request) {
	req, ok := c.checkBulk(w, r)
	if !ok {
		return
	}
	page, err := c.cfg.Client.ListRuns(r.Context(), client.ListOptions{Filter: req.Filter})
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, client.ErrBadFilter) || errors.Is(err, client.ErrMatch) {
			status = http.StatusBadRequest
		}
		writeError(w, status, err.Error())
		return
	}
	out := bulkCount{Matched: len(page.Runs), Filter: req.Filter, Command: c.bulkCommand(req.Operation, req.Revision, req.Reason, req.Filter)}
	for _, run := range page.Runs {
		if client.Operations[req.Operation].Eligible(run.Status.Status) {
			out.Eligible++
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// jobView is a job's record with the command that submits the same job
// and the connection flags of the commands that act on it.
type jobView struct {
	*wire.Job
	Command string `json:"command"`
	Flags   string `json:"flags"`
}

func (c *Console) viewJob(j *wire.Job) jobView {
	return jobView{Job: j, Command: c.bulkCommand(j.Operation, j.Revision, j.Reason, j.Filter), Flags: c.connFlags()}
}

func (c *Console) apiSubmitJob(w http.ResponseWriter, r *http.Request) {
	req, ok := c.checkBulk(w, r)
	if !ok {
		return
	}
	j, err := c.cfg.Client.SubmitJob(r.Context(), client.JobSpec{Operation: req.Operation, Reason: req.Reason, Filter: req.Filter, By: operatorOf(r), Revision: req.Revision})
	if err != nil {
		writeError(w, jobStatus(err), err.Error())
		return
	}
	c.log.Info("console: bulk job submitted", slog.String("job_id", j.ID), slog.String("operation", j.Operation), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusCreated, c.viewJob(j))
}

// jobStatus maps a job error to an HTTP status.
func jobStatus(err error) int {
	switch {
	case errors.Is(err, client.ErrJobNotFound):
		return http.StatusNotFound
	case errors.Is(err, client.ErrJobSettled):
		return http.StatusConflict
	case errors.Is(err, client.ErrBadFilter), errors.Is(err, jetstream.ErrInvalidKey):
		return http.StatusBadRequest
	case errors.Is(err, kvstore.ErrNotProvisioned):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// withClient refuses a request when the console has no client to read
// jobs with.
func (c *Console) withClient(w http.ResponseWriter) bool {
	if c.cfg.Client == nil {
		writeError(w, http.StatusServiceUnavailable, "this console has no jetflow client (Config.Client) to read bulk jobs with")
		return false
	}
	return true
}

func (c *Console) apiJobs(w http.ResponseWriter, r *http.Request) {
	if !c.withClient(w) {
		return
	}
	jobs, err := c.cfg.Client.Jobs(r.Context())
	if err != nil {
		writeError(w, jobStatus(err), err.Error())
		return
	}
	out := make([]jobView, 0, len(jobs))
	for i := len(jobs) - 1; i >= 0; i-- { // newest first
		out = append(out, c.viewJob(jobs[i]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out, "actions": c.cfg.Actions})
}

func (c *Console) apiJob(w http.ResponseWriter, r *http.Request) {
	if !c.withClient(w) {
		return
	}
	j, _, err := c.cfg.Client.Job(r.Context(), r.PathValue("id"), false)
	if err != nil {
		writeError(w, jobStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.viewJob(j))
}

// cancelJobRequest is the body of a job's cancel: nothing yet.
type cancelJobRequest struct{}

func (c *Console) apiCancelJob(w http.ResponseWriter, r *http.Request) {
	var req cancelJobRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	j, err := c.cfg.Client.CancelJob(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, jobStatus(err), err.Error())
		return
	}
	c.log.Info("console: bulk job cancelled", slog.String("job_id", j.ID), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusOK, c.viewJob(j))
}

// apiJobEvents streams the job bucket as server-sent events: a "job"
// event with each job's record as it is now and after every change.
func (c *Console) apiJobEvents(w http.ResponseWriter, r *http.Request) {
	if !c.withClient(w) {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "this server cannot stream events")
		return
	}
	b, err := c.cfg.Client.JobBucket(r.Context())
	if err != nil {
		writeError(w, jobStatus(err), err.Error())
		return
	}
	ctx := r.Context()
	watch, err := b.KV().WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("watch the job bucket: %v", err))
		return
	}
	defer func() { _ = watch.Stop() }()
	c.onShutdown(r)
	startEventStream(w)
	fmt.Fprint(w, "retry: 1000\nevent: hello\ndata: {}\n\n")
	flusher.Flush()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	end := time.NewTimer(streamFor)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.closing:
			return
		case <-end.C:
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		case e, ok := <-watch.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue // the current records are all sent
			}
			var j wire.Job
			if json.Unmarshal(e.Value(), &j) != nil {
				continue
			}
			fmt.Fprintf(w, "event: job\ndata: %s\n\n", mustJSON(c.viewJob(&j)))
		}
		flusher.Flush()
	}
}
