package console

import (
	"context"
	"net/http"
	"time"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/step"
)

// schedulesView lists the schedules (docs/SCHEDULES.md) with their next
// fires and last run.
type schedulesView struct {
	Schedules []scheduleItem `json:"schedules"`
}

type scheduleItem struct {
	Name     string `json:"name"`
	When     string `json:"when"`
	Workflow string `json:"workflow"`
	Overlap  string `json:"overlap"`
	CatchUp  string `json:"catchUp"`
	Jitter   string `json:"jitter,omitempty"`
	Paused   bool   `json:"paused"`
	// Next are the next three fires, Unix milliseconds (none while paused).
	Next []int64 `json:"next"`
	// LastRun is the run the schedule started last, LastStatus its status
	// ("" when it has no record yet or any more).
	LastRun    string `json:"lastRun,omitempty"`
	LastStatus string `json:"lastStatus,omitempty"`
	Started    int    `json:"started"`
	Skipped    int    `json:"skipped"`
	LastSkip   string `json:"lastSkip,omitempty"`
}

func (c *Console) apiSchedules(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	store, err := schedule.Open(ctx, c.cfg.JS, c.cfg.Names)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	infos, err := store.List(ctx)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	now := time.Now()
	v := schedulesView{Schedules: []scheduleItem{}}
	for _, info := range infos {
		it := scheduleItem{
			Name: info.Def.Name, When: info.Describe(), Workflow: info.Def.Workflow, Overlap: info.Def.Overlap,
			CatchUp: info.Def.CatchUp, Jitter: info.Def.Jitter, Paused: info.Def.Paused, Next: []int64{},
			LastRun: info.State.LastRun, Started: info.State.Started, Skipped: info.State.Skipped, LastSkip: info.State.LastSkip,
		}
		for _, t := range info.Next(now, 3) {
			it.Next = append(it.Next, t.UnixMilli())
		}
		if it.LastRun != "" {
			it.LastStatus = c.runStatus(ctx, it.LastRun)
		}
		v.Schedules = append(v.Schedules, it)
	}
	writeJSON(w, http.StatusOK, v)
}

// runStatus is a run's status as its record holds it, "" without one.
func (c *Console) runStatus(ctx context.Context, runID string) string {
	data, _, err := c.cfg.Runs.Get(ctx, runID)
	if err != nil {
		return ""
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return ""
	}
	st, err := step.StatusOf(runID, rec, nil)
	if err != nil {
		return ""
	}
	return st.Status
}
