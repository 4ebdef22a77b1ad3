package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/wire"
)

// The schedules page's actions (docs/CONSOLE.md#schedules): create and
// update from a form, pause, resume, trigger and delete, behind
// --console-actions as the run actions are, each the same as a jetflow
// schedule command.

// scheduleRequest is the body of a schedule action: create's name and
// definition, update's change (only the fields given change), nothing
// for the others.
type scheduleRequest struct {
	Name string `json:"name,omitempty"`
	schedule.Change
}

// scheduleStatus maps a schedule store's refusal to an HTTP status.
func scheduleStatus(err error) int {
	switch {
	case errors.Is(err, schedule.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, schedule.ErrExists), errors.Is(err, schedule.ErrConflict):
		return http.StatusConflict
	}
	return statusOf(err)
}

// scheduleStore opens the schedule store, answering the error itself.
func (c *Console) scheduleStore(w http.ResponseWriter, r *http.Request) (*schedule.Store, bool) {
	store, err := schedule.Open(r.Context(), c.cfg.JS, c.cfg.Names)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return nil, false
	}
	return store, true
}

// deployed refuses a workflow that is not deployed, naming it.
func (c *Console) deployed(ctx context.Context, workflow string) error {
	if _, err := c.defs.get(ctx, workflow, ""); err != nil {
		return fmt.Errorf("workflow %q is not deployed (the Workflows page lists them; jetflow deploy adds one): %w", workflow, err)
	}
	return nil
}

func (c *Console) apiCreateSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	def := wire.Schedule{Name: req.Name, By: operatorOf(r)}
	req.Apply(&def)
	if _, err := schedule.Validate(&def); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := c.deployed(r.Context(), def.Workflow); err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	store, ok := c.scheduleStore(w, r)
	if !ok {
		return
	}
	info, err := store.Create(r.Context(), def)
	if err != nil {
		writeError(w, scheduleStatus(err), err.Error())
		return
	}
	c.log.Info("console: schedule created", slog.String("schedule", def.Name), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusCreated, map[string]any{"ok": true, "schedule": c.scheduleItem(r.Context(), info)})
}

func (c *Console) apiUpdateSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	if !c.checkAction(w, r, &req) {
		return
	}
	name := r.PathValue("name")
	if req.Empty() {
		writeError(w, http.StatusBadRequest, "an update changes at least one of workflow, cron, every, timeZone, input, jitter, overlap, catchUp")
		return
	}
	if req.Cron != nil && req.Every != nil {
		writeError(w, http.StatusBadRequest, "give a cron expression or an interval, not both")
		return
	}
	store, ok := c.scheduleStore(w, r)
	if !ok {
		return
	}
	info, err := store.Get(r.Context(), name)
	if err != nil {
		writeError(w, scheduleStatus(err), err.Error())
		return
	}
	def := info.Def
	req.Apply(&def)
	if _, err := schedule.Validate(&def); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Workflow != nil {
		if err := c.deployed(r.Context(), def.Workflow); err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
	}
	info, err = store.Update(r.Context(), name, operatorOf(r), req.Apply)
	if err != nil {
		writeError(w, scheduleStatus(err), err.Error())
		return
	}
	c.log.Info("console: schedule updated", slog.String("schedule", name), slog.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "schedule": c.scheduleItem(r.Context(), info)})
}

// apiScheduleVerb answers pause, resume, trigger and delete.
func (c *Console) apiScheduleVerb(verb string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct{}
		if !c.checkAction(w, r, &req) {
			return
		}
		store, ok := c.scheduleStore(w, r)
		if !ok {
			return
		}
		name, by, ctx := r.PathValue("name"), operatorOf(r), r.Context()
		answer := map[string]any{"ok": true}
		var err error
		switch verb {
		case "pause":
			_, err = store.Pause(ctx, name, by)
		case "resume":
			_, err = store.Resume(ctx, name, by)
		case "trigger":
			var runID string
			runID, err = store.Trigger(ctx, name, by)
			answer["run"] = runID
		default:
			err = store.Delete(ctx, name)
		}
		if err != nil {
			writeError(w, scheduleStatus(err), err.Error())
			return
		}
		c.log.Info("console: schedule "+verb, slog.String("schedule", name), slog.String("remote", r.RemoteAddr))
		writeJSON(w, http.StatusOK, answer)
	}
}

// scheduleCommand is the jetflow command line an action on schedule name
// does the same as; create and update carry the change's flags.
func (c *Console) scheduleCommand(action, name string, change schedule.Change) string {
	out := []string{"jetflow", "schedule", action, shellQuote(name)}
	if action == "create" || action == "update" {
		for i, f := range change.Flags() {
			if i%2 == 1 {
				f = shellQuote(f)
			}
			out = append(out, f)
		}
	}
	if f := c.connFlags(); f != "" {
		out = append(out, f)
	}
	return strings.Join(out, " ")
}
