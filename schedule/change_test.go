package schedule

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

// TestChangeApply: only the fields a change sets replace the
// definition's; a cron expression replaces an interval, an interval a
// cron expression and its time zone; a zero jitter removes the jitter;
// Flags lists the change as jetflow schedule update takes it.
func TestChangeApply(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	base := wire.Schedule{Name: "n", Workflow: "w", Cron: "0 2 * * *", TimeZone: "Europe/Paris", Input: json.RawMessage(`1`), Jitter: "5m", Overlap: wire.OverlapSkip, CatchUp: wire.CatchUpOne}
	for _, c := range []struct {
		name   string
		change Change
		want   func(*wire.Schedule)
		flags  []string
	}{
		{"input only", Change{Input: json.RawMessage(`{"a":2}`)}, func(d *wire.Schedule) { d.Input = json.RawMessage(`{"a":2}`) }, []string{"--input", `{"a":2}`}},
		{"every replaces cron and zone", Change{Every: str("30s")}, func(d *wire.Schedule) { d.Every, d.Cron, d.TimeZone = "30s", "", "" }, []string{"--every", "30s"}},
		{"cron keeps the zone", Change{Cron: str("@daily")}, func(d *wire.Schedule) { d.Cron = "@daily" }, []string{"--cron", "@daily"}},
		{"zero jitter removes it", Change{Jitter: str("0s"), Overlap: str(wire.OverlapAllow)}, func(d *wire.Schedule) { d.Jitter, d.Overlap = "", wire.OverlapAllow }, []string{"--jitter", "0s", "--overlap", "allow"}},
		{
			"all, in the command's order",
			Change{CatchUp: str("all"), Workflow: str("w2"), TimeZone: str("")},
			func(d *wire.Schedule) { d.CatchUp, d.Workflow, d.TimeZone = "all", "w2", "" },
			[]string{"--workflow", "w2", "--time-zone", "", "--catch-up", "all"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, want := base, base
			c.change.Apply(&got)
			c.want(&want)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("applied: %s\nwant      %s", gj, wj)
			}
			if f := c.change.Flags(); !slices.Equal(f, c.flags) {
				t.Errorf("flags %q, want %q", f, c.flags)
			}
			if c.change.Empty() {
				t.Error("Empty of a change")
			}
		})
	}
	if !(Change{}).Empty() {
		t.Error("the zero change is not Empty")
	}
}

// TestRearms: an update re-arms a schedule when its times change, or
// when it is an interval; a cron schedule whose times stay keeps its
// arming.
func TestRearms(t *testing.T) {
	t.Parallel()
	cron := wire.Schedule{Cron: "0 2 * * *", Input: json.RawMessage(`1`)}
	every := wire.Schedule{Every: "30s"}
	withInput := cron
	withInput.Input = json.RawMessage(`2`)
	zoned := cron
	zoned.TimeZone = "Asia/Tokyo"
	for _, c := range []struct {
		name     string
		from, to wire.Schedule
		want     bool
	}{
		{"cron, input changed", cron, withInput, false},
		{"cron, zone changed", cron, zoned, true},
		{"cron to interval", cron, every, true},
		{"interval, unchanged times", every, every, true},
	} {
		if got := Rearms(c.from, c.to); got != c.want {
			t.Errorf("%s: Rearms %v, want %v", c.name, got, c.want)
		}
	}
}
