package main

import (
	"strings"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

// TestScheduleVerbs: schedule create refuses a bad cron expression (naming
// the field), an unknown workflow and a name in use; list shows the next
// fire and the last run; trigger starts a run and prints its id; pause,
// resume and delete act, and refuse an unknown schedule; every verb has
// --help.
func TestScheduleVerbs(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	for _, v := range []string{"create", "list", "pause", "resume", "trigger", "delete"} {
		if out, _, exit := runEnv(t, nil, "", "schedule", v, "--help"); exit != 0 || !strings.Contains(out, "jetflow schedule "+v) {
			t.Errorf("schedule %s --help: exit %d, %q", v, exit, out)
		}
	}
	for _, c := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"--workflow", "gate", "--cron", "0 2 * 13 *"}, 2, `month (field 4 of 5) "13": 13 is above the month's maximum 12`},
		{[]string{"--workflow", "gate", "--every", "500ms"}, 2, "at least 1s"},
		{[]string{"--workflow", "gate", "--every", "1m", "--overlap", "queue"}, 2, `overlap "queue" is not skip, buffer-one or allow`},
		{[]string{"--workflow", "nope", "--every", "1m"}, 1, `workflow "nope" is not deployed`},
		{[]string{"--workflow", "gate", "--every", "1m", "--input", "{"}, 2, "--input is not JSON"},
	} {
		_, errOut, exit := verb(t, f, append([]string{"schedule", "create", "s1"}, c.args...)...)
		if exit != c.exit || !strings.Contains(errOut, c.want) {
			t.Errorf("schedule create %v: exit %d, %q; want exit %d naming %q", c.args, exit, errOut, c.exit, c.want)
		}
	}
	out, errOut, exit := verb(t, f, "schedule", "create", "hourly", "--workflow", "gate", "--cron", "@hourly", "--input", `{"k":1}`)
	if exit != 0 || !strings.Contains(out, "schedule hourly created: cron @hourly (UTC), runs of gate") || !strings.Contains(out, "next fires: ") {
		t.Fatalf("schedule create: exit %d, %q %q", exit, out, errOut)
	}
	if _, errOut, exit := verb(t, f, "schedule", "create", "hourly", "--workflow", "gate", "--every", "1m"); exit != 1 || !strings.Contains(errOut, "schedule already exists") {
		t.Errorf("a second create of hourly: exit %d, %q", exit, errOut)
	}
	out, errOut, exit = verb(t, f, "schedule", "trigger", "hourly")
	runID := strings.TrimSpace(out)
	if exit != 0 || !strings.HasPrefix(runID, "hourly-manual-") {
		t.Fatalf("schedule trigger: exit %d, %q %q", exit, out, errOut)
	}
	waitStatus(t, f, runID, wire.StatusDone)
	if out, _, exit := verb(t, f, "schedule", "list"); exit != 0 || !strings.Contains(out, "hourly") || !strings.Contains(out, runID) || !strings.Contains(out, "done") || !strings.Contains(out, ":00:00.000Z (in ") {
		t.Errorf("schedule list: exit %d, %q", exit, out)
	}
	if out, _, exit := verb(t, f, "schedule", "pause", "hourly"); exit != 0 || !strings.Contains(out, "schedule hourly paused") {
		t.Errorf("schedule pause: exit %d, %q", exit, out)
	}
	if out, _, exit := verb(t, f, "schedule", "list"); exit != 0 || !strings.Contains(out, "paused") {
		t.Errorf("schedule list of a paused schedule: exit %d, %q", exit, out)
	}
	if out, _, exit := verb(t, f, "schedule", "resume", "hourly"); exit != 0 || !strings.Contains(out, "schedule hourly resumed; next fire ") {
		t.Errorf("schedule resume: exit %d, %q", exit, out)
	}
	if out, _, exit := verb(t, f, "schedule", "delete", "hourly"); exit != 0 || !strings.Contains(out, "schedule hourly deleted") {
		t.Errorf("schedule delete: exit %d, %q", exit, out)
	}
	for _, v := range []string{"pause", "resume", "trigger", "delete"} {
		if _, errOut, exit := verb(t, f, "schedule", v, "hourly"); exit != 1 || !strings.Contains(errOut, `schedule not found: "hourly"`) {
			t.Errorf("schedule %s of a deleted schedule: exit %d, %q", v, exit, errOut)
		}
	}
	if out, _, exit := verb(t, f, "schedule", "list"); exit != 0 || !strings.Contains(out, "no schedules") {
		t.Errorf("schedule list with none: exit %d, %q", exit, out)
	}
}
