package provision_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// oldStore starts a server holding an input stream as jetflow made it
// before the timer stream: schedules in the input stream itself, with a
// consumed start, an unconsumed event and two pending timers of run r1.
func oldStore(t *testing.T) (bundle, jetstream.Consumer) {
	t.Helper()
	b := bundle{ctx: testCtx(t, 60*time.Second), srv: natstest.Server(t), names: subjects.Must("t")}
	b.nc = natstest.Conn(t, b.srv)
	b.js = natstest.JetStream(t, b.nc)
	n := b.names
	if _, err := b.js.CreateStream(b.ctx, jetstream.StreamConfig{
		Name: n.InputStream(), Subjects: []string{n.InputAll(), n.ScheduleAll()},
		AllowMsgSchedules: true, AllowRollup: true, AllowDirect: true,
	}); err != nil {
		t.Fatal(err)
	}
	cons, err := b.js.CreateConsumer(b.ctx, n.InputStream(), jetstream.ConsumerConfig{
		Durable: n.DispatcherConsumer(), FilterSubject: n.InputAll(), AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(b.ctx, n.Start("r1"), []byte(`{"workflow":"w"}`)); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(b.ctx, n.Event("r1", "paid"), []byte(`{"amount":9}`)); err != nil {
		t.Fatal(err)
	}
	for timer, due := range map[string]time.Time{"t1": time.Now().Add(4 * time.Second), "t2": time.Now().Add(time.Hour)} {
		s := nats.NewMsg(n.Schedule("r1", timer))
		s.Header.Set("Nats-Schedule", "@at "+due.UTC().Format(time.RFC3339Nano))
		s.Header.Set("Nats-Schedule-Target", n.Timer("r1"))
		s.Header.Set(wire.HeaderTimer, timer)
		s.Data = []byte(`{"timer":"` + timer + `"}`)
		if _, err := b.js.PublishMsg(b.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return b, cons
}

// Provision refuses an old input stream with a typed error that names it,
// says what is wrong and what to do, and changes nothing.
func TestProvisionRefusesOldInputStream(t *testing.T) {
	t.Parallel()
	b, _ := oldStore(t)
	err := provision.Provision(b.ctx, b.js, b.names, provision.ProvisionOptions{})
	var ie *provision.InputStreamError
	if !errors.Is(err, provision.ErrUnsafeInputStream) || !errors.As(err, &ie) {
		t.Fatalf("Provision of an old store = %v, want an *InputStreamError", err)
	}
	if ie.Stream != b.names.InputStream() || ie.Schedules != 2 {
		t.Errorf("error = %+v, want stream %s with 2 schedules", ie, b.names.InputStream())
	}
	for _, want := range []string{b.names.InputStream(), "Nats-Rollup", "MigrateInputStream", "2 pending timer schedules", "nats stream rm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if _, err := b.js.Stream(b.ctx, b.names.TimerStream()); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the timer stream exists after the refusal: %v", err)
	}
}

// MigrateInputStream refuses while a dispatcher holds an unacknowledged
// input, then, once it is acknowledged, replaces the stream: safe settings, sequences continuing,
// the unconsumed event carried over, and both timers moved so that the
// due one fires through the timer stream onto the run's timer subject.
func TestMigrateInputStream(t *testing.T) {
	t.Parallel()
	b, cons := oldStore(t)
	n := b.names
	held, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provision.MigrateInputStream(b.ctx, b.js, n, provision.ProvisionOptions{}); err == nil || !strings.Contains(err.Error(), "stop every dispatcher") {
		t.Fatalf("migration while an input is held = %v, want a refusal", err)
	}
	// The dispatcher finishes it; then an input arrives that no
	// dispatcher consumes before the migration.
	if err := held.DoubleAck(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(b.ctx, n.Event("r1", "late"), []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}

	m, err := provision.MigrateInputStream(b.ctx, b.js, n, provision.ProvisionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Old sequences: 1 start, 2 event, 3 and 4 the schedules, 5 the late
	// event.
	if m != (provision.Migration{Schedules: 2, Inputs: 1, Dropped: 2, FirstSeq: 6}) {
		t.Errorf("migration = %+v", m)
	}
	in, err := b.js.Stream(b.ctx, n.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if cfg := in.CachedInfo().Config; cfg.AllowMsgSchedules || cfg.AllowRollup || cfg.DenyPurge || !cfg.DenyDelete || len(cfg.Sources) != 1 {
		t.Errorf("migrated input stream config = %+v", cfg)
	}
	ev, err := in.GetLastMsgForSubject(b.ctx, stored(n, n.Event("r1", "late")))
	if err != nil || ev.Sequence != 6 || string(ev.Data) != `{"n":1}` {
		t.Fatalf("carried event = %+v, %v; want seq 6", ev, err)
	}
	fired := nextTimer(b.ctx, t, b.js, n, "r1", 15*time.Second)
	if got := fired.Headers().Get(wire.HeaderTimer); got != "t1" {
		t.Errorf("fired timer %q, want t1", got)
	}
	timers, err := b.js.Stream(b.ctx, n.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	sched, err := timers.GetLastMsgForSubject(b.ctx, n.Schedule("r1", "t2"))
	if err != nil || sched.Header.Get("Nats-Schedule-Target") != n.Fired("r1") {
		t.Errorf("moved schedule t2 = %+v, %v", sched, err)
	}
	// Provisioning again (every jetflow process does at start) keeps it.
	if err := provision.Provision(b.ctx, b.js, n, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	if m, err := provision.MigrateInputStream(b.ctx, b.js, n, provision.ProvisionOptions{}); err != nil || m != (provision.Migration{}) {
		t.Errorf("second migration = %+v, %v; want nothing done", m, err)
	}
}
