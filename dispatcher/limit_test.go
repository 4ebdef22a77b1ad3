package dispatcher

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// TestGCRA: a burst of b shares one instant, then one slot per interval;
// after a quiet spell the burst is back.
func TestGCRA(t *testing.T) {
	t.Parallel()
	const interval, burst = 100.0, 3
	var tat float64
	var slots []float64
	for range 6 {
		var s float64
		s, tat = gcra(tat, 1000, interval, burst)
		slots = append(slots, s)
	}
	want := []float64{1000, 1000, 1000, 1100, 1200, 1300}
	for i := range want {
		if slots[i] != want[i] {
			t.Fatalf("slots %v, want %v", slots, want)
		}
	}
	if s, _ := gcra(tat, 10000, interval, burst); s != 10000 {
		t.Fatalf("after a quiet spell the slot is %v, want now", s)
	}
}

// TestHoldKeepsTheInvocation: the schedule of a held invocation carries
// its body and headers, fires at the slot on the release subject, and
// neither it nor its release stays in the timer stream for good.
func TestHoldKeepsTheInvocation(t *testing.T) {
	t.Parallel()
	names := subjects.Must("t")
	now := time.Unix(1000, 0)
	at := now.Add(1500 * time.Millisecond)
	m := nats.NewMsg(names.Task("ship", "1.2"))
	m.Data = []byte(`{"x":1}`)
	m.Header.Set(wire.HeaderMsgID, "inv/r1/a/n/1")
	m.Header.Set("Jetflow-Token", "tok")
	m.Header.Set(wire.HeaderTTL, "60")
	h := hold(names, "ship", subjects.VersionToken("1.2"), m, at, now)
	if string(h.Data) != `{"x":1}` || h.Header.Get("Jetflow-Token") != "tok" || h.Header.Get(wire.HeaderMsgID) != "inv/r1/a/n/1" {
		t.Fatalf("hold lost the invocation: %s %v", h.Data, h.Header)
	}
	if h.Header.Get(wire.HeaderTTL) != "" || h.Header.Get(wire.HeaderScheduleTTL) != "59" {
		t.Fatalf("TTLs: Nats-TTL %q, Nats-Schedule-TTL %q; want none and 59", h.Header.Get(wire.HeaderTTL), h.Header.Get(wire.HeaderScheduleTTL))
	}
	if h.Header.Get(wire.HeaderSchedule) != "@at 1970-01-01T00:16:41.5Z" || h.Header.Get(wire.HeaderScheduleTarget) != names.Release("ship", "1.2") {
		t.Fatalf("schedule %v", h.Header)
	}
	if again := hold(names, "ship", "1~2", m, at.Add(time.Second), now); again.Subject != h.Subject {
		t.Fatalf("a repeat of the publish is scheduled on %s, not %s", again.Subject, h.Subject)
	}
	m.Header.Del(wire.HeaderTTL)
	if h := hold(names, "ship", "1~2", m, at, now); h.Header.Get(wire.HeaderScheduleTTL) != wire.FiredTimerTTLValue {
		t.Fatalf("without a TTL, the release keeps %q", h.Header.Get(wire.HeaderScheduleTTL))
	}
}
