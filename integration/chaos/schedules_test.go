package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// chaosSchedule is a schedule that fires through the chaos: its runs
// join the driver's and are checked as every run is (one end, nothing
// applied twice, replay equal), and the schedule's own invariants on top
// (checkSchedules).
type chaosSchedule struct {
	def wire.Schedule
	// input is every run's input (the fan workflow's i).
	input int
	// step is the distance between two fire times; contiguous: catch-up
	// all with overlap allow, so no fire time between the first run and
	// the last may lack its run.
	step       time.Duration
	contiguous bool
}

// chaosSchedules fire every two seconds on the fan workflow (which
// retention keeps), 1.5 runs a second beside the driver's: two that must
// start a run for every fire time, one that skips fires while its last
// run has not settled.
var chaosSchedules = []chaosSchedule{
	{def: wire.Schedule{Name: "tick", Workflow: "fan", Every: "2s", Input: json.RawMessage(`7`), Overlap: wire.OverlapAllow, CatchUp: wire.CatchUpAll}, input: 7, step: 2 * time.Second, contiguous: true},
	{def: wire.Schedule{Name: "even", Workflow: "fan", Cron: "*/2 * * * * *", Input: json.RawMessage(`8`), Overlap: wire.OverlapAllow, CatchUp: wire.CatchUpAll}, input: 8, step: 2 * time.Second, contiguous: true},
	{def: wire.Schedule{Name: "lone", Workflow: "fan", Every: "2s", Input: json.RawMessage(`9`), Overlap: wire.OverlapSkip, CatchUp: wire.CatchUpOne}, input: 9, step: 2 * time.Second},
}

// scheduleAckWait is the dispatchers' AckWait (the command's default):
// how long a fire a killed dispatcher held waits before another takes it.
const scheduleAckWait = 30 * time.Second

// createSchedules creates the chaos schedules; they fire from now on.
func (h *harness) createSchedules(ctx context.Context) error {
	store, err := schedule.Open(ctx, h.f.JS, h.names)
	if err != nil {
		return err
	}
	for _, s := range chaosSchedules {
		if err := retryFor(ctx, func(ctx context.Context) error {
			_, err := store.Create(ctx, s.def)
			if errors.Is(err, schedule.ErrExists) {
				return nil // an earlier try stored it; its answer was lost
			}
			return err
		}); err != nil {
			return fmt.Errorf("create schedule %s: %w", s.def.Name, err)
		}
	}
	return nil
}

// scheduleFinish bounds finishSchedules and the wait for the runs it
// hands over, from the end of the recovery: the settle phase may be spent.
const scheduleFinish = 4 * time.Minute

// finishSchedules ends the schedules' part, beside the recovery: once
// every dispatcher runs again it waits out the AckWait of fires killed
// dispatchers held (so that they were taken again, by a live one, while
// the schedules were active), pauses the schedules, waits until the dispatchers took every
// fire left, and hands each run the schedules started to the driver,
// which waits for it to settle like the runs it started itself.
func (h *harness) finishSchedules(ctx context.Context, d *driver) error {
	if err := waitFor(ctx, 2*time.Minute, func(context.Context) error {
		for _, p := range h.dispatchers {
			if !p.running() {
				return fmt.Errorf("dispatcher %s is down", p.name)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := pause(ctx, scheduleAckWait+10*time.Second); err != nil {
		return err
	}
	store, err := schedule.Open(ctx, h.f.JS, h.names)
	if err != nil {
		return err
	}
	for _, s := range chaosSchedules {
		if err := retryFor(ctx, func(ctx context.Context) error {
			_, err := store.Pause(ctx, s.def.Name, "chaos")
			return err
		}); err != nil {
			return fmt.Errorf("pause schedule %s: %w", s.def.Name, err)
		}
	}
	if err := waitFor(ctx, 2*time.Minute, func(ctx context.Context) error {
		c, err := h.f.JS.Consumer(ctx, h.names.ScheduleStream(), h.names.ScheduleConsumer())
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if ci.NumPending+uint64(ci.NumAckPending) > 0 {
			return fmt.Errorf("%d fires not taken, %d not acknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("fires left after the schedules paused: %w", err)
	}
	histories, err := h.readInputs(ctx)
	if err != nil {
		return err
	}
	for id := range histories {
		s, ok := scheduleOfRun(id)
		if !ok {
			continue
		}
		r := &runLog{id: id, i: s.input, wf: workflowNamed(s.def.Workflow), scheduled: s.def.Name, started: time.Now()}
		d.mu.Lock()
		d.runs = append(d.runs, r)
		d.mu.Unlock()
		d.wg.Go(func() {
			if err := d.drive(ctx, r); err != nil {
				r.failure = err
			}
		})
	}
	return nil
}

// scheduleOfRun is the chaos schedule whose fire started run id.
func scheduleOfRun(id string) (chaosSchedule, bool) {
	for _, s := range chaosSchedules {
		if strings.HasPrefix(id, s.def.Name+"-") {
			return s, true
		}
	}
	return chaosSchedule{}, false
}

func workflowNamed(name string) *workflow {
	for _, wf := range workflows {
		if wf.name == name {
			return wf
		}
	}
	panic("no workflow " + name)
}

// checkSchedules checks the schedules' own invariants over their runs
// (each is also checked as any run is): every run's id names a fire time
// of its schedule, to the second and on its times (each fire time names
// one run, so a fire that came twice started it once); a run started by
// a trigger there is none; and for the contiguous schedules no fire time
// between the first run and the last lacks its run: catch-up all makes up
// for fires no dispatcher took in time and for those the server did not
// make while it had no leader.
func (h *harness) checkSchedules(res *results, runs []*runLog, histories map[string][]input) {
	slots := map[string][]time.Time{}
	for _, r := range runs {
		if r.scheduled == "" {
			continue
		}
		res.scheduledRuns++
		s, _ := scheduleOfRun(r.id)
		slot, err := time.Parse("20060102T150405Z", strings.TrimPrefix(r.id, s.def.Name+"-"))
		if err != nil {
			res.problem("run %s of schedule %s: no fire time in its id: %v", r.id, s.def.Name, err)
			continue
		}
		if s.def.Cron != "" && slot.Second()%2 != 0 {
			res.problem("run %s of schedule %s (%s): fire time %s is not one of its times", r.id, s.def.Name, s.def.Cron, slot.Format(time.RFC3339))
		}
		slots[s.def.Name] = append(slots[s.def.Name], slot)
		starts := 0
		for _, in := range histories[r.id] {
			if in.kind == subjects.KindStart {
				starts++
			}
		}
		res.scheduleStarts += starts
	}
	for _, s := range chaosSchedules {
		ts := slots[s.def.Name]
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		if len(ts) < 2 {
			res.problem("schedule %s started %d runs through the chaos", s.def.Name, len(ts))
			continue
		}
		var gaps []string
		for i := 1; i < len(ts); i++ {
			d := ts[i].Sub(ts[i-1])
			if s.contiguous && d%s.step != 0 {
				res.problem("schedule %s: runs for %s and %s are %v apart, not a whole number of its %v", s.def.Name,
					ts[i-1].Format(time.RFC3339), ts[i].Format(time.RFC3339), d, s.step)
			}
			if s.contiguous && d > s.step {
				gaps = append(gaps, ts[i-1].Add(s.step).Format(time.RFC3339)+" ("+strconv.Itoa(int(d/s.step)-1)+" fire times)")
			}
		}
		if len(gaps) > 0 {
			res.problem("schedule %s (catch-up all, overlap allow): no run for the fire times after %s", s.def.Name, strings.Join(gaps, ", "))
		}
		res.scheduleSpan = append(res.scheduleSpan, fmt.Sprintf("%s %d runs %s..%s", s.def.Name, len(ts), ts[0].Format("15:04:05"), ts[len(ts)-1].Format("15:04:05")))
	}
}
