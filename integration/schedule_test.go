package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
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
	s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.Start("*")))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for subj, n := range si.State.Subjects {
		runID, _, _, err := e.names.ParseInput(subj)
		if err != nil {
			t.Fatal(err)
		}
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
