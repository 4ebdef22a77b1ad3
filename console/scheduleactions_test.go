package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/wire"
)

// TestScheduleActions: a console with actions creates, updates, pauses,
// resumes, triggers and deletes a schedule, refuses what the CLI refuses
// with the status that says why, and writes each to the audit log with
// the jetflow schedule command that does the same.
func TestScheduleActions(t *testing.T) {
	b := setup(t, setupOptions{actions: true})
	ctx := t.Context()
	store, err := schedule.Open(ctx, b.f.JS, b.f.Names)
	if err != nil {
		t.Fatal(err)
	}
	get := func() *schedule.Info {
		t.Helper()
		info, err := store.Get(ctx, "sc")
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	var e apiError
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/schedules", `{"name":"sc","workflow":"order","cron":"0 3 * * *","input":{"items":[]}}`, http.StatusCreated, ""},
		{"/api/schedules", `{"name":"sc","workflow":"order","every":"1m"}`, http.StatusConflict, "schedule already exists"},
		{"/api/schedules", `{"name":"sc2","workflow":"order","cron":"0 3 * * x"}`, http.StatusBadRequest, `day of week (field 5 of 5) "x"`},
		{"/api/schedules", `{"name":"sc2","workflow":"nope","every":"1m"}`, http.StatusNotFound, `workflow "nope" is not deployed`},
		{"/api/schedules", `{"name":"sc2","workflow":"order","every":"1m","bogus":1}`, http.StatusBadRequest, "bogus"},
		{"/api/schedules/sc/update", `{}`, http.StatusBadRequest, "changes at least one"},
		{"/api/schedules/sc/update", `{"cron":"0 4 * * *","every":"1m"}`, http.StatusBadRequest, "not both"},
		{"/api/schedules/sc/update", `{"overlap":"queue"}`, http.StatusBadRequest, `overlap "queue" is not skip, buffer-one or allow`},
		{"/api/schedules/nope/update", `{"every":"1m"}`, http.StatusNotFound, `schedule not found: "nope"`},
		{"/api/schedules/nope/pause", `{}`, http.StatusNotFound, `schedule not found: "nope"`},
		{"/api/schedules/sc/update", `{"cron":"0 4 * * *","jitter":"5m"}`, http.StatusOK, ""},
	} {
		e = apiError{}
		if status := b.postJSON(t, c.path, c.body, &e); status != c.status || !strings.Contains(e.Error, c.want) {
			t.Fatalf("POST %s %s: %d %q, want %d naming %q", c.path, c.body, status, e.Error, c.status, c.want)
		}
	}
	if info := get(); info.Describe() != "cron 0 4 * * * (UTC)" || info.Def.Jitter != "5m" || string(info.Def.Input) != `{"items":[]}` || info.Def.By != "console" {
		t.Fatalf("updated schedule: %+v", info.Def)
	}
	if status := b.postJSON(t, "/api/schedules/sc/pause", `{}`, nil); status != http.StatusOK || !get().Def.Paused {
		t.Fatalf("pause: %d, paused %v", status, get().Def.Paused)
	}
	if status := b.postJSON(t, "/api/schedules/sc/resume", `{}`, nil); status != http.StatusOK || get().Def.Paused {
		t.Fatalf("resume: %d, paused %v", status, get().Def.Paused)
	}
	var trig struct {
		Run string `json:"run"`
	}
	if status := b.postJSON(t, "/api/schedules/sc/trigger", `{}`, &trig); status != http.StatusOK || !strings.HasPrefix(trig.Run, "sc-manual-") {
		t.Fatalf("trigger: %d %+v", status, trig)
	}
	natstest.WaitFor(t, 2*time.Minute, "the triggered run "+trig.Run, func() error {
		_, err := b.f.Client.Status(ctx, trig.Run)
		return err
	})
	if status := b.postJSON(t, "/api/schedules/sc/delete", `{}`, nil); status != http.StatusOK {
		t.Fatalf("delete: %d", status)
	}
	if _, err := store.Get(ctx, "sc"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("schedule after delete: %v", err)
	}

	page, err := b.f.Client.AuditPage(context.Background(), 0, 100, client.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	commands := map[string]string{}
	for _, en := range page.Entries {
		if strings.HasPrefix(en.Action, "schedule-") && en.Result == wire.AuditAccepted {
			commands[en.Action] = en.Command
			if en.Source != "console" || en.Schedule != "sc" {
				t.Errorf("audit entry %+v", en)
			}
		}
	}
	for action, want := range map[string]string{
		"schedule-create":  `jetflow schedule create sc --workflow order --cron '0 3 * * *' --input '{"items":[]}'`,
		"schedule-update":  `jetflow schedule update sc --cron '0 4 * * *' --jitter 5m`,
		"schedule-pause":   "jetflow schedule pause sc",
		"schedule-resume":  "jetflow schedule resume sc",
		"schedule-trigger": "jetflow schedule trigger sc",
		"schedule-delete":  "jetflow schedule delete sc",
	} {
		if got := commands[action]; !strings.HasPrefix(got, want+" --nats ") && got != want {
			t.Errorf("%s: command %q, want %q", action, got, want)
		}
	}
	if len(commands) != 6 {
		t.Errorf("accepted schedule actions audited: %v", commands)
	}
}
