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
	for _, v := range []string{"create", "list", "pause", "resume", "trigger", "delete", "update"} {
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
	for _, c := range []struct {
		args []string
		exit int
		want string
	}{
		{nil, 2, "give at least one of --workflow"},
		{[]string{"--cron", "@daily", "--every", "1m"}, 2, "give --cron or --every, not both"},
		{[]string{"--cron", "0 2 * * x"}, 2, `day of week (field 5 of 5) "x"`},
		{[]string{"--every", "1m", "--time-zone", "Europe/Paris"}, 2, "a time zone applies to a cron expression"},
		{[]string{"--workflow", "nope"}, 1, `workflow "nope" is not deployed`},
	} {
		_, errOut, exit := verb(t, f, append([]string{"schedule", "update", "hourly"}, c.args...)...)
		if exit != c.exit || !strings.Contains(errOut, c.want) {
			t.Errorf("schedule update %v: exit %d, %q; want exit %d naming %q", c.args, exit, errOut, c.exit, c.want)
		}
	}
	if out, errOut, exit := verb(t, f, "schedule", "update", "hourly", "--input", `{"k":2}`, "--overlap", "allow"); exit != 0 ||
		!strings.Contains(out, "schedule hourly updated: cron @hourly (UTC), runs of gate") || !strings.Contains(out, "times unchanged") || !strings.Contains(out, "next fires: ") {
		t.Errorf("schedule update of the input: exit %d, %q %q", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "schedule", "update", "hourly", "--cron", "30 * * * *", "--time-zone", "Asia/Kolkata"); exit != 0 ||
		!strings.Contains(out, "cron 30 * * * * (Asia/Kolkata)") || !strings.Contains(out, "re-armed") {
		t.Errorf("schedule update of the times: exit %d, %q %q", exit, out, errOut)
	}
	if out, errOut, exit := verb(t, f, "schedule", "update", "hourly", "--cron", "@hourly", "--time-zone", ""); exit != 0 || !strings.Contains(out, "cron @hourly (UTC)") {
		t.Errorf("schedule update back to UTC: exit %d, %q %q", exit, out, errOut)
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
	for _, v := range []string{"pause", "resume", "trigger", "delete", "update"} {
		args := []string{"schedule", v, "hourly"}
		if v == "update" {
			args = append(args, "--overlap=skip")
		}
		if _, errOut, exit := verb(t, f, args...); exit != 1 || !strings.Contains(errOut, `schedule not found: "hourly"`) {
			t.Errorf("schedule %s of a deleted schedule: exit %d, %q", v, exit, errOut)
		}
	}
	if out, _, exit := verb(t, f, "schedule", "list"); exit != 0 || !strings.Contains(out, "no schedules") {
		t.Errorf("schedule list with none: exit %d, %q", exit, out)
	}
}
