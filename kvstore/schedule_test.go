package kvstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// scheduleTimer publishes a timer the way the dispatcher arms one: an @at
// schedule on its own subject whose produced message lands on the run's
// timer subject.
func scheduleTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run, timer string, due time.Time) {
	t.Helper()
	m := nats.NewMsg(names.Schedule(run, timer))
	m.Header.Set("Nats-Schedule", "@at "+due.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Nats-Schedule-Target", names.Timer(run))
	m.Header.Set(wire.HeaderTimer, timer)
	m.Data = []byte(`{"timer":"` + timer + `"}`)
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("schedule %s: %v", m.Subject, err)
	}
}

// nextTimer waits for the next fired timer of run in the input stream.
func nextTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run string, wait time.Duration) jetstream.Msg {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{names.Timer(run)}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("no timer fired on %s within %s: %v", names.Timer(run), wait, err)
	}
	return m
}

// The provisioned input stream accepts schedules: an @at timer fires into
// the run's timer subject, no earlier than due, carrying its headers.
func TestScheduledTimerFires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	due := time.Now().Add(300 * time.Millisecond)
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "t1", due)

	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 10*time.Second)
	md, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.Timestamp.Before(due) {
		t.Errorf("fired at %s, before its due time %s", md.Timestamp, due)
	}
	h := m.Headers()
	if h.Get(wire.HeaderTimer) != "t1" || h.Get("Nats-Scheduler") != b.names.Schedule("r1", "t1") || string(m.Data()) != `{"timer":"t1"}` {
		t.Errorf("fired message: headers %v data %s", h, m.Data())
	}
	if _, kind, _, err := b.names.ParseInput(m.Subject()); err != nil || kind != subjects.KindTimer {
		t.Errorf("fired on %q: %s %v", m.Subject(), kind, err)
	}
}

// Purging a schedule's subject cancels it: of two timers, the cancelled
// one due first never fires, the other does.
func TestScheduledTimerCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "cancelled", now.Add(300*time.Millisecond))
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "kept", now.Add(400*time.Millisecond))
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Purge(b.ctx, jetstream.WithPurgeSubject(b.names.Schedule("r1", "cancelled"))); err != nil {
		t.Fatal(err)
	}
	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 10*time.Second)
	if got := m.Headers().Get(wire.HeaderTimer); got != "kept" {
		t.Fatalf("first fired timer is %q, want kept", got)
	}
	info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(b.names.Timer("r1")))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[b.names.Timer("r1")]; n != 1 {
		t.Fatalf("%d timers fired, want 1", n)
	}
}
