package console

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/wire"
)

// TestScheduleEndpoint: the schedules page lists each schedule with its
// next fires and its last run with that run's status; a paused one has no
// next fire.
func TestScheduleEndpoint(t *testing.T) {
	b := setup(t, setupOptions{})
	ctx := t.Context()
	store, err := schedule.Open(ctx, b.f.JS, b.f.Names)
	if err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"items":[]}`)
	if _, err := store.Create(ctx, wire.Schedule{Name: "often", Workflow: "order", Every: "1s", Input: input}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, wire.Schedule{Name: "nightly", Workflow: "order", Cron: "0 2 * * *", Input: input}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pause(ctx, "nightly", "ops"); err != nil {
		t.Fatal(err)
	}
	var v schedulesView
	natstest.WaitFor(t, 2*time.Minute, "the last run of schedule often", func() error {
		b.get(t, "/api/schedules", &v)
		if len(v.Schedules) != 2 || v.Schedules[1].LastRun == "" || v.Schedules[1].LastStatus == "" {
			return fmt.Errorf("%+v", v)
		}
		return nil
	})
	nightly, often := v.Schedules[0], v.Schedules[1]
	if nightly.Name != "nightly" || !nightly.Paused || len(nightly.Next) != 0 || nightly.When != "cron 0 2 * * * (UTC)" {
		t.Fatalf("paused schedule: %+v", nightly)
	}
	if often.Name != "often" || len(often.Next) != 3 || often.Next[1]-often.Next[0] != 1000 || often.Workflow != "order" {
		t.Fatalf("active schedule: %+v", often)
	}
}
