package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// schedWait bounds every wait of these tests: fires come each second,
// but a loaded machine may be slow to take them.
const schedWait = 2 * time.Minute

func (e *env) scheduleStore(t testing.TB) *schedule.Store {
	t.Helper()
	s, err := schedule.Open(e.ctx, e.f.JS, e.names)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) createSchedule(t testing.TB, def wire.Schedule) *schedule.Info {
	t.Helper()
	info, err := e.scheduleStore(t).Create(e.ctx, def)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// scheduledStarts are the starts stored in the input stream for runs of
// schedule name, by run id, with how many starts each run got.
func (e *env) scheduledStarts(t testing.TB, name string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for runID, n := range e.inputsPerRun(t, subjects.KindStart) {
		if strings.HasPrefix(runID, name+"-") {
			out[runID] = n
		}
	}
	return out
}

// waitStarts waits until schedule name started at least n runs, and
// returns them by id.
func (e *env) waitStarts(t testing.TB, name string, n int) map[string]uint64 {
	t.Helper()
	var got map[string]uint64
	natstest.WaitFor(t, schedWait, fmt.Sprintf("%d runs of schedule %s", n, name), func() error {
		if got = e.scheduledStarts(t, name); len(got) < n {
			return fmt.Errorf("%d runs: %v", len(got), got)
		}
		return nil
	})
	return got
}

// storedFires counts the fires of schedule name the stream holds (none
// taken yet).
func (e *env) storedFires(t testing.TB, name string) uint64 {
	t.Helper()
	s, err := e.f.JS.Stream(e.ctx, e.names.ScheduleStream())
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.ScheduleFire(name)))
	if err != nil {
		t.Fatal(err)
	}
	return si.State.Subjects[e.names.ScheduleFire(name)]
}

// slotOf is the fire time in a scheduled run's id.
func slotOf(t testing.TB, name, runID string) time.Time {
	t.Helper()
	ts, err := time.Parse("20060102T150405Z", strings.TrimPrefix(runID, name+"-"))
	if err != nil {
		t.Fatalf("run %s: no fire time in its id: %v", runID, err)
	}
	return ts
}

func sortedIDs(m map[string]uint64) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestScheduleEveryStartsRunsEachInterval: an @every schedule's fires
// start runs one interval apart, each once, under ids made of the name
// and the fire time; the runs settle.
func TestScheduleEveryStartsRunsEachInterval(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.createSchedule(t, wire.Schedule{Name: "tick", Workflow: "one", Every: "1s", Input: json.RawMessage(`21`), Overlap: wire.OverlapAllow})
	got := e.waitStarts(t, "tick", 3)
	ids := sortedIDs(got)
	for i, id := range ids {
		if got[id] != 1 {
			t.Errorf("run %s got %d starts", id, got[id])
		}
		if i > 0 {
			if d := slotOf(t, "tick", id).Sub(slotOf(t, "tick", ids[i-1])); d%time.Second != 0 || d <= 0 {
				t.Errorf("runs %s and %s are %v apart, not whole intervals", ids[i-1], id, d)
			}
		}
	}
	st := e.wait(t, ids[0], schedWait)
	if st.Status != "done" || string(st.Result) != "42" {
		t.Fatalf("run %s: %s %s, want done 42", ids[0], st.Status, st.Result)
	}
}

// TestScheduleCronStartsRuns: a six-field cron expression firing each
// second starts runs at whole seconds.
func TestScheduleCronStartsRuns(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.createSchedule(t, wire.Schedule{Name: "crony", Workflow: "one", Cron: "*/2 * * * * *", Input: json.RawMessage(`1`), Overlap: wire.OverlapAllow})
	for _, id := range sortedIDs(e.waitStarts(t, "crony", 2)) {
		if s := slotOf(t, "crony", id).Second(); s%2 != 0 {
			t.Errorf("run %s: fire at second %d, not a multiple of 2", id, s)
		}
	}
}

// scheduleState reads what the dispatchers recorded of schedule name.
func (e *env) scheduleState(t testing.TB, name string) wire.ScheduleState {
	t.Helper()
	info, err := e.scheduleStore(t).Get(e.ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return info.State
}

// checkOnce fails for a run that got more than one start.
func checkOnce(t testing.TB, starts map[string]uint64) {
	t.Helper()
	for id, n := range starts {
		if n != 1 {
			t.Errorf("run %s got %d starts, want 1", id, n)
		}
	}
}

// checkContiguous fails unless the runs' fire times follow each other
// one interval apart from the first to the last: no fire was lost.
func checkContiguous(t testing.TB, name string, starts map[string]uint64, every time.Duration) {
	t.Helper()
	ids := sortedIDs(starts)
	for i := 1; i < len(ids); i++ {
		if d := slotOf(t, name, ids[i]).Sub(slotOf(t, name, ids[i-1])); d != every {
			t.Errorf("runs %s and %s are %v apart: a fire between them started no run (runs %v)", ids[i-1], ids[i], d, ids)
		}
	}
}

// TestScheduleFiresWhileDispatchersAreKilled: the fires of a schedule
// keep starting runs, each once, while its dispatcher processes are
// killed (SIGKILL) and replaced; fires made while none ran wait in the
// stream and start their runs when one comes back (catch-up all), and
// none is lost.
func TestScheduleFiresWhileDispatchersAreKilled(t *testing.T) {
	t.Parallel()
	e := setup(t, options{dispatchers: none})
	a := e.spawnDispatcher(t, "", 2*time.Second)
	e.createSchedule(t, wire.Schedule{Name: "beat", Workflow: "one", Every: "1s", Input: json.RawMessage(`1`), Overlap: wire.OverlapAllow, CatchUp: wire.CatchUpAll})
	before := len(e.waitStarts(t, "beat", 2))
	a.kill(t)
	natstest.WaitFor(t, schedWait, "a fire stored while no dispatcher runs", func() error {
		if n := e.storedFires(t, "beat"); n < 2 {
			return fmt.Errorf("%d fires stored", n)
		}
		return nil
	})
	b := e.spawnDispatcher(t, "", 2*time.Second)
	got := e.waitStarts(t, "beat", before+4)
	b.kill(t)
	natstest.WaitFor(t, schedWait, "a fire stored while no dispatcher runs", func() error {
		if n := e.storedFires(t, "beat"); n < 1 {
			return fmt.Errorf("%d fires stored", n)
		}
		return nil
	})
	e.addDispatcher(dispatcher.Config{AckWait: 2 * time.Second})
	e.waitStarts(t, "beat", len(got)+2)
	if err := e.scheduleStore(t).Delete(e.ctx, "beat"); err != nil {
		t.Fatal(err)
	}
	got = e.scheduledStarts(t, "beat")
	checkOnce(t, got)
	checkContiguous(t, "beat", got, time.Second)
}

// TestScheduleOverlapSkip: while the schedule's last run has not settled,
// its fires start nothing; once it settles, the next fire starts a run.
func TestScheduleOverlapSkip(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.createSchedule(t, wire.Schedule{Name: "lone", Workflow: "forever", Every: "1s", Overlap: wire.OverlapSkip})
	first := sortedIDs(e.waitStarts(t, "lone", 1))[0]
	natstest.WaitFor(t, schedWait, "two fires skipped", func() error {
		if st := e.scheduleState(t, "lone"); st.Skipped < 2 {
			return fmt.Errorf("state %+v", st)
		}
		return nil
	})
	if got := e.scheduledStarts(t, "lone"); len(got) != 1 {
		t.Fatalf("runs %v while %s has not settled, want only it", sortedIDs(got), first)
	}
	if err := e.f.Client.Cancel(e.ctx, first, "make room"); err != nil {
		t.Fatal(err)
	}
	e.wait(t, first, schedWait)
	got := e.waitStarts(t, "lone", 2)
	second := sortedIDs(got)[1]
	if !slotOf(t, "lone", second).After(slotOf(t, "lone", first)) {
		t.Fatalf("second run %s is not after %s", second, first)
	}
	checkOnce(t, got)
}

// TestScheduleOverlapBufferOne: while the last run has not settled, the
// first fire's start waits and later fires are dropped; the waiting start
// runs once the last run settles, under its own fire time.
func TestScheduleOverlapBufferOne(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.createSchedule(t, wire.Schedule{Name: "queue", Workflow: "forever", Every: "1s", Overlap: wire.OverlapBufferOne})
	first := sortedIDs(e.waitStarts(t, "queue", 1))[0]
	var st wire.ScheduleState
	natstest.WaitFor(t, schedWait, "a start waiting and a fire dropped", func() error {
		if st = e.scheduleState(t, "queue"); st.Waiting == "" || st.Skipped < 1 {
			return fmt.Errorf("state %+v", st)
		}
		return nil
	})
	waiting, err := time.Parse(time.RFC3339Nano, st.Waiting)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.scheduledStarts(t, "queue"); len(got) != 1 {
		t.Fatalf("runs %v while %s has not settled, want only it", sortedIDs(got), first)
	}
	if err := e.f.Client.Cancel(e.ctx, first, "make room"); err != nil {
		t.Fatal(err)
	}
	got := e.waitStarts(t, "queue", 2)
	if want := schedule.RunID("queue", waiting); sortedIDs(got)[1] != want {
		t.Fatalf("runs %v: the second is not the waiting start %s", sortedIDs(got), want)
	}
	checkOnce(t, got)
}

// TestScheduleCatchUp: three fires made while no dispatcher runs are all
// late when one starts (taken more than LateAfter after their times, the
// schedule quiet for almost a minute after them): none starts no run for
// them, one starts the last one's, all starts each.
func TestScheduleCatchUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy  string
		started int
	}{{wire.CatchUpNone, 0}, {wire.CatchUpOne, 1}, {wire.CatchUpAll, 3}} {
		t.Run(tc.policy, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{dispatchers: none})
			// A burst of three fires a few seconds from now, then none
			// for 57 seconds.
			s := time.Now().UTC().Second()
			burst := fmt.Sprintf("%d,%d,%d * * * * *", (s+4)%60, (s+5)%60, (s+6)%60)
			e.createSchedule(t, wire.Schedule{Name: "burst", Workflow: "one", Cron: burst, Input: json.RawMessage(`1`), Overlap: wire.OverlapAllow, CatchUp: tc.policy})
			natstest.WaitFor(t, schedWait, "three fires stored while no dispatcher runs", func() error {
				if n := e.storedFires(t, "burst"); n < 3 {
					return fmt.Errorf("%d fires stored", n)
				}
				return nil
			})
			// Past LateAfter of the last fire.
			time.Sleep(1500 * time.Millisecond)
			e.addDispatcher(dispatcher.Config{Schedules: schedule.Config{LateAfter: time.Second}})
			var st wire.ScheduleState
			natstest.WaitFor(t, schedWait, "the three fires acted on", func() error {
				if st = e.scheduleState(t, "burst"); st.Started+st.Skipped < 3 {
					return fmt.Errorf("state %+v", st)
				}
				return nil
			})
			// The state is saved before the start is published: wait for
			// the starts it counts.
			got := e.waitStarts(t, "burst", st.Started)
			if st.Started != tc.started || len(got) != tc.started {
				t.Fatalf("catch-up %s: runs %v, state %+v; want %d runs", tc.policy, sortedIDs(got), st, tc.started)
			}
			checkOnce(t, got)
			if tc.policy == wire.CatchUpOne {
				last, err := time.Parse(time.RFC3339Nano, st.LastSlot)
				if err != nil {
					t.Fatal(err)
				}
				if want := schedule.RunID("burst", last); sortedIDs(got)[0] != want {
					t.Fatalf("catch-up one started %v, want the last fire's run %s", sortedIDs(got), want)
				}
			}
		})
	}
}

// TestSchedulePauseResumeTriggerDelete: a paused schedule starts no run
// (a trigger still starts one, at once); resumed, it fires again; deleted,
// it fires no more and leaves nothing in the stream.
func TestSchedulePauseResumeTriggerDelete(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	store := e.scheduleStore(t)
	e.createSchedule(t, wire.Schedule{Name: "pulse", Workflow: "one", Every: "1s", Input: json.RawMessage(`2`), Overlap: wire.OverlapAllow})
	e.waitStarts(t, "pulse", 1)
	info, err := store.Pause(e.ctx, "pulse", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if !info.Def.Paused || len(info.Next(time.Now(), 3)) != 0 {
		t.Fatalf("paused schedule: %+v, next %v", info.Def, info.Next(time.Now(), 3))
	}
	pausedAt := time.Now()
	runID, err := store.Trigger(e.ctx, "pulse", "ops")
	if err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, runID, schedWait); st.Status != "done" || string(st.Result) != "4" {
		t.Fatalf("triggered run %s: %s %s", runID, st.Status, st.Result)
	}
	// Three intervals without a fire's run.
	time.Sleep(3 * time.Second)
	for id := range e.scheduledStarts(t, "pulse") {
		if !strings.Contains(id, "-manual-") && slotOf(t, "pulse", id).After(pausedAt) {
			t.Fatalf("run %s started while the schedule was paused (since %s)", id, pausedAt.Format(time.RFC3339Nano))
		}
	}
	if _, err := store.Resume(e.ctx, "pulse", "ops"); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	natstest.WaitFor(t, schedWait, "a run after resume", func() error {
		for id := range e.scheduledStarts(t, "pulse") {
			if !strings.Contains(id, "-manual-") && slotOf(t, "pulse", id).After(resumedAt) {
				return nil
			}
		}
		return errors.New("none yet")
	})
	if err := store.Delete(e.ctx, "pulse"); err != nil {
		t.Fatal(err)
	}
	deletedAt := time.Now()
	if _, err := store.Get(e.ctx, "pulse"); !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	time.Sleep(3 * time.Second)
	for id := range e.scheduledStarts(t, "pulse") {
		if !strings.Contains(id, "-manual-") && slotOf(t, "pulse", id).After(deletedAt) {
			t.Fatalf("run %s started after the schedule was deleted", id)
		}
	}
	s, err := e.f.JS.Stream(e.ctx, e.names.ScheduleStream())
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.ScheduleSubjects("pulse")))
	if err != nil {
		t.Fatal(err)
	}
	if len(si.State.Subjects) != 0 {
		t.Fatalf("deleted schedule left %v", si.State.Subjects)
	}
}

// TestScheduleDuplicateFireIsDropped: every fire of the schedule comes
// twice (a second message schedule, on the same whole seconds, targets
// its fire subject, as a fire made again after a leader change would):
// each fire time starts its run once.
func TestScheduleDuplicateFireIsDropped(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.createSchedule(t, wire.Schedule{Name: "twice", Workflow: "one", Every: "1s", Input: json.RawMessage(`1`), Overlap: wire.OverlapAllow})
	twin := e.names.ScheduleJitterAt("twice", "twin")
	m := nats.NewMsg(twin)
	m.Header.Set(wire.HeaderSchedule, "@every 1s")
	m.Header.Set(wire.HeaderScheduleTarget, e.names.ScheduleFire("twice"))
	if _, err := e.f.JS.PublishMsg(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	s, err := e.f.JS.Stream(e.ctx, e.names.ScheduleStream())
	if err != nil {
		t.Fatal(err)
	}
	dupSeen := false
	natstest.WaitFor(t, schedWait, "four runs, and a fire time fired twice", func() error {
		got := e.scheduledStarts(t, "twice")
		if !dupSeen {
			// Two fires stored for one time: the twin fires too.
			si, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.ScheduleFire("twice")))
			if err != nil {
				return err
			}
			dupSeen = si.State.Msgs >= 2 || len(e.logs.lines("already started")) > 0
		}
		if len(got) < 4 || !dupSeen {
			return fmt.Errorf("runs %v, duplicate seen %v", sortedIDs(got), dupSeen)
		}
		return nil
	})
	if err := s.Purge(e.ctx, jetstream.WithPurgeSubject(twin)); err != nil {
		t.Fatal(err)
	}
	got := e.scheduledStarts(t, "twice")
	checkOnce(t, got)
	for id := range got {
		if n := len(e.logs.lines("schedule: run started", "run_id="+id+" ")); n > 1 {
			t.Errorf("run %s started %d times", id, n)
		}
	}
	for _, id := range sortedIDs(got)[:3] {
		e.wait(t, id, schedWait)
		e.checkRecord(t, id, 0)
	}
}
