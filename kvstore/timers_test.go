package kvstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// A timer is what the restart and cluster tests check the streams by
// (package provision tests the timers themselves, with the same helpers).

// scheduleTimer publishes a timer the way the dispatcher arms one: an @at
// schedule on its own subject in the timer stream, whose fired message
// the input stream copies onto the run's timer subject.
func scheduleTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run, timer string, due time.Time) {
	t.Helper()
	m := nats.NewMsg(names.Schedule(run, timer))
	m.Header.Set("Nats-Schedule", "@at "+due.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Nats-Schedule-Target", names.Fired(run))
	m.Header.Set("Nats-Schedule-TTL", strconv.Itoa(int(wire.FiredTimerTTL.Seconds())))
	m.Header.Set(wire.HeaderTimer, timer)
	m.Data = []byte(`{"timer":"` + timer + `"}`)
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("schedule %s: %v", m.Subject, err)
	}
}

// nextTimer waits for the next fired timer of run in the input stream.
func nextTimer(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names, run string, wait time.Duration) jetstream.Msg {
	t.Helper()
	// Right after a node restart the stream's new leader may not answer
	// yet (no responders): ask again until wait is over.
	var m jetstream.Msg
	deadline := time.Now().Add(wait)
	for {
		// As stored: a partitioned stream keeps it under the run's partition.
		subject := names.Timer(run)
		if s, err := js.Stream(ctx, names.InputStream()); err == nil {
			subject = names.StoredInput(subject, provision.Partitions(s.CachedInfo().Config))
		}
		c, err := js.OrderedConsumer(ctx, names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		if err == nil {
			m, err = c.Next(jetstream.FetchMaxWait(max(time.Second, time.Until(deadline))))
		}
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no timer fired on %s within %s: %v", names.Timer(run), wait, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no timer fired on %s: %v (%v)", names.Timer(run), ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
