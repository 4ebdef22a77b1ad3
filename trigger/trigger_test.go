package trigger_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/trigger"
	"github.com/jetflow/jetflow/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// orderFlow waits for a "paid" event after its start, then ends with it.
const orderFlow = `{"$workflow":"0.2","revision":"o1","initial":"wait","states":{
 "wait":{"on":[{"event":"paid","to":"done"}]},
 "done":{"final":true}}}`

const triggers = `{
 "orders":   {"subject": "shop.orders.*", "key": "$.data.order"},
 "payments": {"subject": "shop.payments", "action": "event", "event": "paid", "run": {"$concat": ["orders-", "$.data.order"]}, "input": "$.data"}
}`

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func startFleet(t *testing.T, dir string) *fleet.Fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: dir},
		Dispatcher: &dispatcher.Config{},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func stop(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fn(ctx); err != nil {
		t.Error(err)
	}
}

// A message on an application subject starts one run however often it is
// published (its key picks the run id), and a message on another picks
// the run its query names and delivers an event to it; messages published
// once the triggers are stored, while no runner runs, wait in their
// streams.
func TestSubjectTriggersStartOnceAndCorrelate(t *testing.T) {
	t.Parallel()
	f := startFleet(t, t.TempDir())
	defer stop(t, f.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := f.Deploy(ctx, "orders", []byte(orderFlow)); err != nil {
		t.Fatal(err)
	}
	if _, err := trigger.Store(ctx, f.JS, f.Names, "orders", []byte(triggers)); err != nil {
		t.Fatal(err)
	}
	// Storing made the streams: orders published with core NATS, as an
	// application that knows nothing of jetflow does, before any runner
	// bound the trigger, wait in its stream.
	for range 3 { // a redelivered or repeated order
		if err := f.Conn.Publish("shop.orders.eu", []byte(`{"order":"A1","total":5}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	r := trigger.NewRunner(trigger.Config{JS: f.JS, Names: f.Names, Client: f.Client, Logger: quiet()})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 2*time.Minute, "run orders-A1 to wait", func() error {
		st, err := f.Client.Status(ctx, "orders-A1")
		if err != nil {
			return err
		}
		if st.Status != "waiting" {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
	// Stop the runner: a payment published now waits in its stream.
	stop(t, r.Stop)
	msg := nats.NewMsg("shop.payments")
	msg.Data = []byte(`{"order":"A1","amount":5}`)
	msg.Header.Set("Nats-Msg-Id", "pay-1")
	if err := f.Conn.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	r = trigger.NewRunner(trigger.Config{JS: f.JS, Names: f.Names, Client: f.Client, Logger: quiet()})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer stop(t, r.Stop)
	st, err := f.Client.Wait(ctx, "orders-A1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "done" {
		t.Fatalf("after the payment: %+v", st)
	}
	// One run: the repeats were rejected on it as second starts, each in
	// a step of its own that may trail the run's first.
	natstest.WaitFor(t, 2*time.Minute, "the repeated starts rejected on the run", func() error {
		data, _, err := f.Runs.Get(ctx, "orders-A1")
		if err != nil {
			return err
		}
		rec, err := runrecord.Decode(data)
		if err != nil {
			return err
		}
		starts := 0
		for _, rj := range rec.Rejected {
			if rj.Kind == "start" {
				starts++
			}
		}
		if starts != 2 {
			return fmt.Errorf("the run rejected %d repeated starts, want 2: %+v", starts, rec.Rejected)
		}
		return nil
	})
}

func TestParseNamesTheMemberAtFault(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	for _, c := range []struct{ file, pointer string }{
		{`[]`, ""},
		{`{}`, ""},
		{`{"a.b": {"subject": "x"}}`, "/a.b"},
		{`{"t": {}}`, "/t"},
		{`{"t": {"subject": "x", "sujbect": "y"}}`, "/t"},
		{`{"t": {"subject": "jetflow.in.x.start"}}`, "/t/subject"},
		{`{"t": {"subject": "$JS.API.>"}}`, "/t/subject"},
		{`{"t": {"subject": "a..b"}}`, "/t/subject"},
		{`{"t": {"subject": "a.>.b"}}`, "/t/subject"},
		{`{"t": {"subject": "a", "action": "stop"}}`, "/t/action"},
		{`{"t": {"subject": "a", "action": "event", "run": "$.data.id"}}`, "/t/event"},
		{`{"t": {"subject": "a", "action": "event", "event": "go"}}`, "/t/run"},
		{`{"t": {"subject": "a", "event": "go"}}`, "/t/event"},
		{`{"t": {"subject": "a", "input": {"$nope": 1}}}`, "/t/input"},
		{`{"t": {"webhook": {}}}`, "/t/webhook/secretEnv"},
		{`{"t": {"subject": "a", "webhook": {"secretEnv": "S"}}}`, "/t/webhook"},
		{`{"t": {"subject": "a", "singleton": {}}}`, "/t/singleton/key"},
		{`{"t": {"subject": "a", "singleton": {"key": "$.data.c", "mode": "wait"}}}`, "/t/singleton/mode"},
		{`{"t": {"subject": "a", "debounce": {"key": "$.data.c"}}}`, "/t/debounce/delay"},
		{`{"t": {"subject": "a", "debounce": {"key": "$.data.c", "delay": "25h"}}}`, "/t/debounce/delay"},
		{`{"t": {"subject": "a", "action": "event", "event": "go", "run": "$.data.id", "debounce": {"key": "$.data.c", "delay": "1s"}}}`, "/t"},
	} {
		_, err := trigger.Parse([]byte(c.file), "w", names)
		var pe *trigger.PathError
		if !errors.As(err, &pe) || pe.Pointer != c.pointer {
			t.Errorf("Parse(%s): %v, want a refusal at %q", c.file, err, c.pointer)
		}
	}
}

const controlled = `{
 "jobs":  {"subject": "shop.jobs", "key": "$.data.job", "singleton": {"key": "$.data.customer"}},
 "edits": {"subject": "shop.edits", "key": "$.data.rev", "debounce": {"key": "$.data.doc", "delay": "1s"}}
}`

// A trigger's singleton key refuses a second active run of one customer,
// naming the first; its debounce runs only the last message of a burst.
func TestTriggerSingletonAndDebounce(t *testing.T) {
	t.Parallel()
	f, ctx := orderFleet(t, 3*time.Minute, controlled)
	natstest.WaitFor(t, 2*time.Minute, "the trigger streams", func() error {
		for _, name := range []string{"jobs", "edits"} {
			if _, err := f.JS.Stream(ctx, f.Names.TriggerStream(name)); err != nil {
				return err
			}
		}
		return nil
	})
	waiting := func(run string) {
		t.Helper()
		natstest.WaitFor(t, 2*time.Minute, "run "+run+" to wait", func() error {
			st, err := f.Client.Status(ctx, run)
			if err != nil {
				return err
			}
			if st.Status != "waiting" {
				return fmt.Errorf("status %s", st.Status)
			}
			return nil
		})
	}
	decided := func(run, outcome, about string) {
		t.Helper()
		natstest.WaitFor(t, 2*time.Minute, "decision on "+run, func() error {
			d, ok, err := f.Client.StartDecision(ctx, run)
			if err != nil {
				return err
			}
			if !ok || d.Outcome != outcome || about != "" && d.Run != about {
				return fmt.Errorf("decision %+v (kept %v)", d, ok)
			}
			return nil
		})
	}
	if err := f.Conn.Publish("shop.jobs", []byte(`{"job":"J1","customer":"ada"}`)); err != nil {
		t.Fatal(err)
	}
	waiting("jobs-J1")
	if err := f.Conn.Publish("shop.jobs", []byte(`{"job":"J2","customer":"ada"}`)); err != nil {
		t.Fatal(err)
	}
	decided("jobs-J2", wire.StartOutcomeRefused, "jobs-J1")
	for _, rev := range []string{"1", "2", "3"} {
		if err := f.Conn.Publish("shop.edits", []byte(`{"rev":"`+rev+`","doc":"readme"}`)); err != nil {
			t.Fatal(err)
		}
	}
	waiting("edits-3")
	// Replaced by a later start of the burst (which one depends on the
	// order the dispatchers took them in).
	decided("edits-1", wire.StartOutcomeReplaced, "")
	decided("edits-2", wire.StartOutcomeReplaced, "edits-3")
}

// A deploy rebinds every trigger while messages flow: what a consumer had
// pulled when it was rebound is handled, not left in a stopped client
// until its AckWait (30 s) hands it to the next consumer. Twenty deploys
// during 300 orders; every run starts well within the AckWait.
func TestRebindHandsOverWhatWasPulled(t *testing.T) {
	t.Parallel()
	f, ctx := orderFleet(t, 2*time.Minute, triggers)
	const n = 300
	published := make(chan error, 1)
	go func() {
		for i := range n {
			if err := f.Conn.Publish("shop.orders.eu", fmt.Appendf(nil, `{"order":"R%d"}`, i)); err != nil {
				published <- err
				return
			}
			if i%15 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		published <- f.Conn.Flush()
	}()
	for range 20 {
		if _, err := trigger.Store(ctx, f.JS, f.Names, "orders", []byte(triggers)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for i := range n {
		left[fmt.Sprintf("orders-R%d", i)] = true
	}
	natstest.WaitFor(t, 15*time.Second, "every order's run, within half the AckWait", func() error {
		for id := range left {
			if _, err := f.Client.Status(ctx, id); err == nil {
				delete(left, id)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d of %d runs not started", len(left), n)
		}
		return nil
	})
}

// A trigger over a subject another stream holds is refused when stored,
// naming the subject, and nothing of the file is stored; the streams made
// for its other triggers stay.
func TestStoreRefusesASubjectAnotherStreamHolds(t *testing.T) {
	t.Parallel()
	f := startFleet(t, t.TempDir())
	defer stop(t, f.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"shop.payments"}}); err != nil {
		t.Fatal(err)
	}
	_, err := trigger.Store(ctx, f.JS, f.Names, "orders", []byte(triggers))
	if err == nil || !strings.Contains(err.Error(), "trigger payments: stream "+f.Names.TriggerStream("payments")+" over shop.payments") {
		t.Fatalf("Store over a held subject: %v", err)
	}
	specs, err := trigger.Load(ctx, f.JS, f.Names)
	if err != nil || len(specs) != 0 {
		t.Fatalf("stored after the refusal: %v %v", specs, err)
	}
	// the stream made for the file's other trigger stays, empty
	if st, err := f.JS.Stream(ctx, f.Names.TriggerStream("orders")); err != nil || st.CachedInfo().State.Msgs != 0 {
		t.Fatalf("the orders stream after the refusal: %v", err)
	}
}

// orderFleet starts a fleet running the order workflow's triggers from
// file under a runner of its own, all stopped when the test ends; ctx ends
// after timeout.
func orderFleet(t *testing.T, timeout time.Duration, file string) (*fleet.Fleet, context.Context) {
	f := startFleet(t, t.TempDir())
	t.Cleanup(func() { stop(t, f.Stop) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	r := runOrderTriggers(ctx, t, f, file)
	t.Cleanup(func() { stop(t, r.Stop) })
	return f, ctx
}

// runOrderTriggers deploys the order workflow with the trigger file
// triggers and starts a runner of them; the caller stops it.
func runOrderTriggers(ctx context.Context, t *testing.T, f *fleet.Fleet, triggers string) *trigger.Runner {
	t.Helper()
	if _, err := f.Deploy(ctx, "orders", []byte(orderFlow)); err != nil {
		t.Fatal(err)
	}
	if _, err := trigger.Store(ctx, f.JS, f.Names, "orders", []byte(triggers)); err != nil {
		t.Fatal(err)
	}
	r := trigger.NewRunner(trigger.Config{JS: f.JS, Names: f.Names, Client: f.Client, Logger: quiet()})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}
