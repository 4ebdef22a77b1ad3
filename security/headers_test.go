package security

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
)

// TestInputHeadersReachNoOtherMessage: subject permissions cannot restrict
// JetStream headers, so an event source, allowed nothing but events, puts
// on its events the headers that would act on other messages. The input
// stream refuses them (provision.InputStreamConfig; provision's
// TestInputStreamRefusesHeaders covers every header of the server):
//   - Nats-Rollup: all is refused and the history stays intact;
//   - Nats-Schedule is refused: nothing fires on a run's timer subject;
//   - a squatted start id (the predictable "start/<run>" of before) drops
//     no start, since starts carry a random id;
//   - timers still fire, through the timer stream, and are applied;
//   - the event source cannot publish on the timer stream's subjects.
func TestInputHeadersReachNoOtherMessage(t *testing.T) {
	r := startRoles(t)
	ctx := testCtx(t, 60*time.Second)
	n := r.names
	app := r.client(t, r.app)
	if err := app.StartRun(ctx, "two", "p1", nil); err != nil {
		t.Fatal(err)
	}
	inputs, err := r.op.js.Stream(ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	// The subject an input is stored on (a partitioned stream's).
	stored := func(subject string) string {
		return n.StoredInput(subject, provision.Partitions(inputs.CachedInfo().Config))
	}
	start, err := inputs.GetLastMsgForSubject(ctx, stored(n.Start("p1")))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(ctx context.Context, subject string, header map[string]string) error {
		m := nats.NewMsg(subject)
		m.Data = []byte(`{"timer":"t1"}`)
		for k, v := range header {
			m.Header.Set(k, v)
		}
		_, err := r.events.js.PublishMsg(ctx, m)
		return err
	}

	if err := publish(ctx, n.Event("p1", "x"), map[string]string{"Nats-Rollup": "all"}); err == nil {
		t.Error("the input stream stored an event with Nats-Rollup: all")
	}
	if got, err := inputs.GetMsg(ctx, start.Sequence); err != nil || got.Subject != stored(n.Start("p1")) {
		t.Errorf("the start of p1 is gone after a roll-up attempt: %v", err)
	}
	for _, target := range []string{n.Timer("p1"), n.Fired("p1")} {
		if err := publish(ctx, n.Event("p1", "y"), map[string]string{"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": target}); err == nil {
			t.Errorf("the input stream stored a schedule targeting %s", target)
		}
	}

	// The old, predictable id of p2's start, taken first by the event
	// source: p2 starts all the same.
	if err := publish(ctx, n.Event("p1", "z"), map[string]string{wire.HeaderMsgID: "start/p2"}); err != nil {
		t.Fatal(err)
	}
	if err := app.StartRun(ctx, "two", "p2", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "p2 starts despite the squatted id", func() error {
		_, err := app.Status(ctx, "p2")
		return err
	})

	// A timer fires through the timer stream and ends the run.
	if err := app.StartRun(ctx, "timed", "t1", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := app.Wait(ctx, "t1"); err != nil || st.Status != wire.StatusDone || st.State != "/states/done" {
		t.Fatalf("the timed run ended %+v, %v", st, err)
	}
	fired, err := inputs.GetLastMsgForSubject(ctx, stored(n.Timer("t1")))
	if err != nil || !strings.HasPrefix(fired.Header.Get("Nats-Stream-Source"), n.TimerStream()+" ") {
		t.Errorf("the timer of t1 did not come from %s: %+v, %v", n.TimerStream(), fired, err)
	}
	// Nothing the event source sent fired on p1's timer subject.
	if _, err := inputs.GetLastMsgForSubject(ctx, stored(n.Timer("p1"))); err == nil {
		t.Error("a timer fired for p1, which armed none that is due")
	}

	for _, subject := range []string{n.Fired("p1"), n.Schedule("p1", "t1"), n.Timer("p1")} {
		r.events.denied(t, "publish on "+subject, subject, func(ctx context.Context) error {
			return publish(ctx, subject, map[string]string{"Nats-Schedule": "@every 1s", "Nats-Schedule-Target": n.Fired("p1")})
		})
	}
	if _, err := app.Status(ctx, "p1"); errors.Is(err, client.ErrRunNotFound) {
		t.Error("p1 is gone")
	}
}
