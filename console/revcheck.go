package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// The revision check (docs/REVISIONS.md): the workflow page asks which
// of a workflow's recent runs a deployed revision would keep the same,
// and the console runs the check `jetflow check-revision` runs, reading
// the histories with an ordered consumer of its own (nothing the
// dispatchers consume is touched) and replaying them on every core. It
// changes nothing, so it needs no --console-actions; migrating the runs
// it finds the same is a bulk action (bulk.go).

// Defaults and bounds of a check's runs (?runs=N), as --runs.
const (
	defaultCheckRuns = 1000
	maxCheckRuns     = 10000
)

// checkView is a check's report: the CLI's JSON report, each run with
// its verdict as one sentence, the summary line and the commands.
type checkView struct {
	Workflow string     `json:"workflow"`
	Revision string     `json:"revision"`
	Status   string     `json:"status,omitempty"`
	Limit    int        `json:"limit"`
	Runs     []checkRun `json:"runs"`
	Summary  struct {
		Checked  int   `json:"checked"`
		Same     int   `json:"same"`
		Diverges int   `json:"diverges"`
		Fails    int   `json:"fails"`
		Movable  int   `json:"movable"`
		Millis   int64 `json:"millis"`
	} `json:"summary"`
	// Text is the summary line `jetflow check-revision` ends with.
	Text string `json:"text"`
	// Command checks the same runs from a shell (FILE is the revision's
	// document, which `jetflow workflows` does not print); Migrate is the
	// bulk job that moves the waiting and running runs found the same.
	Command string `json:"command"`
	Migrate string `json:"migrate"`
	// MigrateNote says why Migrate is empty when runs may move.
	MigrateNote string `json:"migrateNote,omitempty"`
	// Move names the runs the migration moves, by id: those found the
	// same that are waiting or running on a revision deployed before the
	// checked one. The migrate job names exactly these (its filter's
	// runs), so a run found diverging is never offered the move.
	Move []string `json:"move"`
}

type checkRun struct {
	replay.RunCheck
	// Text is the verdict as the command prints it.
	Text string `json:"text"`
}

// apiCheckRevision answers GET workflows/{name}/check?revision=R
// [&runs=N][&status=S]: the check of the N runs of the workflow started
// last (in status S) against deployed revision R.
func (c *Console) apiCheckRevision(w http.ResponseWriter, r *http.Request) {
	if !c.withClient(w) {
		return
	}
	name, q := r.PathValue("name"), r.URL.Query()
	if err := subjects.CheckWorkflowName(name); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rev := strings.TrimSpace(q.Get("revision"))
	if rev == "" {
		writeError(w, http.StatusBadRequest, "revision is required: the deployed revision to check the runs against")
		return
	}
	limit := defaultCheckRuns
	if v := q.Get("runs"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCheckRuns {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("runs %q: give a number of runs from 1 to %d", v, maxCheckRuns))
			return
		}
		limit = n
	}
	status := q.Get("status")
	filter := wire.RunFilter{Workflow: name, Status: status}
	if _, err := client.CompileFilter(filter); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	older, err := c.olderRevisions(ctx, name, rev)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	l, err := registry.NewLoader(c.cfg.Registry, c.cfg.RunOptions, 0)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	to, err := l.Load(ctx, name, rev)
	if err != nil {
		writeError(w, statusOf(err), fmt.Sprintf("revision %q of workflow %s: %v", rev, name, err))
		return
	}
	// One check at a time: each takes every core while it replays.
	select {
	case c.checking <- struct{}{}:
		defer func() { <-c.checking }()
	case <-ctx.Done():
		return
	}
	page, err := c.cfg.Client.ListRuns(ctx, client.ListOptions{Filter: filter, Sort: client.SortStart, Scan: true, Limit: limit})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	ids := make([]string, 0, len(page.Runs))
	for _, run := range page.Runs {
		ids = append(ids, run.Status.Run)
	}
	began := time.Now()
	src := replay.Source{JS: c.cfg.JS, Names: c.cfg.Names, Registry: c.cfg.Registry, Runs: c.cfg.Runs, Settings: c.cfg.Settings, RunOptions: c.cfg.RunOptions}
	checks, err := replay.CheckRevision(ctx, src, to, ids)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	v := checkView{Workflow: name, Revision: to.Revision, Status: status, Limit: limit, Runs: make([]checkRun, 0, len(checks)), Move: []string{}}
	v.Summary.Millis = time.Since(began).Milliseconds()
	for _, k := range checks {
		k.Proof = "" // a migration's, which the job computes again
		v.Summary.Checked++
		text := fmt.Sprintf("same (%d inputs)", k.Inputs)
		switch k.Verdict {
		case replay.CheckSame:
			v.Summary.Same++
			switch {
			case k.Status != wire.StatusWaiting && k.Status != wire.StatusRunning:
			case k.Revision == v.Revision:
				text += ", on this revision already"
			case !older[k.Revision]:
				text += ", on a revision deployed after this one: not moved back"
			default:
				v.Summary.Movable++
				v.Move = append(v.Move, k.Run)
			}
		case replay.CheckDiverges:
			v.Summary.Diverges++
			text = k.Divergence.Text()
		default:
			v.Summary.Fails++
			text = "fails: " + k.Error
		}
		v.Runs = append(v.Runs, checkRun{RunCheck: k, Text: text})
	}
	s := v.Summary
	v.Text = fmt.Sprintf("checked %d run%s of %s against revision %s in %s: %d same (%d waiting or running may move), %d diverge, %d fail",
		s.Checked, pluralS(s.Checked), name, v.Revision, time.Duration(s.Millis)*time.Millisecond, s.Same, s.Movable, s.Diverges, s.Fails)
	args := []string{"check-revision", name, "FILE", "--runs", strconv.Itoa(limit)}
	if status != "" {
		args = append(args, "--status", status)
	}
	v.Command = c.cmdLine(args...)
	slices.Sort(v.Move) // in run id order, as the job takes them
	v.Migrate = c.bulkCommand(client.OpMigrate, v.Revision, "", wire.RunFilter{Workflow: name, Runs: v.Move})
	if len(v.Move) > wire.MaxFilterRuns {
		v.Migrate = ""
		v.MigrateNote = fmt.Sprintf("%d runs may move, more than the %d one job names: check fewer runs, or migrate them with jetflow migrate --to %s --workflow %s --status waiting --yes (each run is checked again and those that diverge refuse)",
			len(v.Move), wire.MaxFilterRuns, v.Revision, name)
	}
	writeJSON(w, http.StatusOK, v)
}

// olderRevisions is the set of the revisions of workflow name deployed
// before revision rev (a run on one of them may move onto rev).
func (c *Console) olderRevisions(ctx context.Context, name, rev string) (map[string]bool, error) {
	list, err := c.cfg.Registry.List(ctx)
	if err != nil {
		return nil, err
	}
	older := map[string]bool{}
	for _, wf := range list {
		if wf.Name != name {
			continue
		}
		for _, rv := range wf.Revisions {
			if rv.Revision == rev {
				return older, nil
			}
			older[rv.Revision] = true
		}
	}
	return map[string]bool{}, nil // not deployed: the load that follows says so
}

// checkRevisions are the revisions the workflow page offers to check,
// newest first: those deployed after the oldest revision that waiting or
// running runs are on (active counts them by revision), the only ones
// runs may move onto; when no run is waiting or running, those deployed
// after the first (settled runs can still be checked against them).
func checkRevisions(revs []registry.RevisionRef, active map[string]int) []string {
	from := 0 // the position of the oldest revision with active runs
	for i, rv := range revs {
		if active[rv.Revision] > 0 {
			from = i
			break
		}
	}
	out := []string{}
	for i := len(revs) - 1; i > from; i-- {
		out = append(out, revs[i].Revision)
	}
	return out
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
