package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// A timer that no event beats, so the run ends only if timers fire.
const afterTimer = `{"$workflow":"0.2","revision":"a1","initial":"wait","states":{
	"wait":{"on":[{"event":"never","to":"early"}],"after":{"ms":200,"to":"late"}},
	"early":{"final":true},"late":{"final":true}}}`

// A store made by an older jetflow (schedules in the input stream) is
// refused unless the fleet is asked to migrate it; migrated, timers run
// through the timer stream.
func TestMigrateInputsOnStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	n := subjects.Must("jetflow")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: n.InputStream(), Subjects: []string{n.InputAll(), n.ScheduleAll()},
		AllowMsgSchedules: true, AllowRollup: true,
	}); err != nil {
		t.Fatal(err)
	}

	if _, err := Start(ctx, Config{URL: srv.ClientURL(), Dispatcher: &dispatcher.Config{}}); !errors.Is(err, provision.ErrUnsafeInputStream) {
		t.Fatalf("start on an unsafe input stream: %v, want ErrUnsafeInputStream", err)
	}
	f, err := Start(ctx, Config{URL: srv.ClientURL(), Dispatcher: &dispatcher.Config{}, MigrateInputs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Stop(context.Background()) }()
	s, err := js.Stream(ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	// Purges are allowed (retention's, by the dispatcher role's API
	// request); deletes and every header that acts on other messages not.
	if c := s.CachedInfo().Config; c.AllowMsgSchedules || c.AllowRollup || !c.DenyDelete {
		t.Fatalf("migrated input stream still unsafe: schedules %v, roll-ups %v, deny delete %v", c.AllowMsgSchedules, c.AllowRollup, c.DenyDelete)
	}
	if _, err := f.Deploy(ctx, "after", []byte(afterTimer)); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.StartRun(ctx, "after", "m1", nil); err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.Wait(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "done" || st.State != "/states/late" {
		t.Fatalf("run after migration: %+v, want done in /states/late", st)
	}
}
