package provision_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// scheduleTimer publishes a timer the way the dispatcher arms one: an @at
// schedule on its own subject in the timer stream, whose fired message
// the input stream copies onto the run's timer subject.
func scheduleTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run, timer string, due time.Time) {
	t.Helper()
	scheduleTimerTTL(ctx, t, js, names, run, timer, due, provision.FiredTimerTTL)
}

func scheduleTimerTTL(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run, timer string, due time.Time, ttl time.Duration) {
	t.Helper()
	m := nats.NewMsg(names.Schedule(run, timer))
	m.Header.Set("Nats-Schedule", "@at "+due.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Nats-Schedule-Target", names.Fired(run))
	m.Header.Set("Nats-Schedule-TTL", strconv.Itoa(int(ttl.Seconds())))
	m.Header.Set(wire.HeaderTimer, timer)
	m.Data = []byte(`{"timer":"` + timer + `"}`)
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("schedule %s: %v", m.Subject, err)
	}
}

// nextTimer waits for the next fired timer of run in the input stream.
func nextTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run string, wait time.Duration) jetstream.Msg {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{stored(names, names.Timer(run))}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("no timer fired on %s within %s: %v", names.Timer(run), wait, err)
	}
	return m
}

// A schedule in the timer stream fires through the input stream's source
// onto the run's timer subject, no earlier than due, with its headers.
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
	// The copy is stamped when the input stream stores it, after the fire.
	if md.Timestamp.Before(due) {
		t.Errorf("fired at %s, before its due time %s", md.Timestamp, due)
	}
	t.Logf("due %s, stored in the input stream %s later", due.Format(time.StampMilli), md.Timestamp.Sub(due).Round(time.Millisecond))
	h := m.Headers()
	if h.Get(wire.HeaderTimer) != "t1" || h.Get("Nats-Scheduler") != b.names.Schedule("r1", "t1") ||
		h.Get("Nats-Stream-Source") == "" || string(m.Data()) != `{"timer":"t1"}` {
		t.Errorf("fired message: headers %v data %s", h, m.Data())
	}
	if _, kind, _, err := b.names.ParseInput(m.Subject()); err != nil || kind != subjects.KindTimer {
		t.Errorf("fired on %q: %s %v", m.Subject(), kind, err)
	}
	// The one-shot schedule purged itself when it fired.
	timers, err := b.js.Stream(b.ctx, b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := timers.GetLastMsgForSubject(b.ctx, b.names.Schedule("r1", "t1")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the schedule is still there after firing: %v", err)
	}
}

// Purging a schedule's subject in the timer stream cancels it: of two
// timers, the cancelled one due first never fires, the other does.
func TestScheduledTimerCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "cancelled", now.Add(300*time.Millisecond))
	scheduleTimer(b.ctx, t, b.js, b.names, "r1", "kept", now.Add(400*time.Millisecond))
	timers, err := b.js.Stream(b.ctx, b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	if err := timers.Purge(b.ctx, jetstream.WithPurgeSubject(b.names.Schedule("r1", "cancelled"))); err != nil {
		t.Fatal(err)
	}
	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 10*time.Second)
	if got := m.Headers().Get(wire.HeaderTimer); got != "kept" {
		t.Fatalf("first fired timer is %q, want kept", got)
	}
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := in.Info(b.ctx, jetstream.WithSubjectFilter(stored(b.names, b.names.Timer("r1"))))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[stored(b.names, b.names.Timer("r1"))]; n != 1 {
		t.Fatalf("%d timers fired, want 1", n)
	}
}

// A fired timer expires from the timer stream after its TTL, so that the
// stream does not grow forever, while the input stream's copy, which
// carries the same Nats-TTL header, stays: history is kept.
func TestFiredTimerExpiresOnlyFromTheTimerStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	scheduleTimerTTL(b.ctx, t, b.js, b.names, "r1", "t1", time.Now(), time.Second)
	m := nextTimer(b.ctx, t, b.js, b.names, "r1", 10*time.Second)
	if m.Headers().Get("Nats-TTL") == "" {
		t.Errorf("the copy carries no Nats-TTL: %v", m.Headers())
	}
	md, _ := m.Metadata()
	// A control with the same TTL, stored in the timer stream after the
	// input stream stored its copy: once the timer stream has expired it,
	// a TTL the input stream honoured would have expired the copy too.
	control := nats.NewMsg(b.names.Schedule("control", "ttl"))
	control.Header.Set("Nats-TTL", "1s")
	if _, err := b.js.PublishMsg(b.ctx, control); err != nil {
		t.Fatal(err)
	}
	timers, err := b.js.Stream(b.ctx, b.names.TimerStream())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 20*time.Second, "the fired timer and the control expire from the timer stream", func() error {
		info, err := timers.Info(b.ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return errors.New(strconv.FormatUint(info.State.Msgs, 10) + " messages left")
		}
		return nil
	})
	in, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := in.GetMsg(b.ctx, md.Sequence.Stream); err != nil || got.Subject != stored(b.names, b.names.Timer("r1")) {
		t.Fatalf("the input stream's copy is gone after the TTL: %v", err)
	}
}
