package dispatcher

import (
	"testing"
	"time"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// A schedule saved in an outbox before the timer stream existed targets
// the input stream's timer subject, which the timer stream refuses: it is
// published with the fired subject instead.
func TestLegacyTimerIsRetargeted(t *testing.T) {
	t.Parallel()
	names := subjects.Must("")
	old := runrecord.Outgoing{ID: "r1/t1", Kind: runrecord.OutTimer, Subject: names.Schedule("r1", "t1"), Header: map[string]string{
		wire.HeaderSchedule: "@at 2026-11-29T17:08:53.574Z", wire.HeaderScheduleTarget: names.Timer("r1"),
	}}
	m := step.Msg(old)
	legacyTimer(names, m)
	if m.Header.Get(wire.HeaderScheduleTarget) != names.Fired("r1") || m.Header.Get(wire.HeaderScheduleTTL) != wire.FiredTimerTTLValue {
		t.Errorf("legacy schedule headers %v", m.Header)
	}
	m.Header.Set(wire.HeaderScheduleTarget, "elsewhere")
	legacyTimer(names, m)
	if m.Header.Get(wire.HeaderScheduleTarget) != "elsewhere" {
		t.Errorf("a target other than a timer subject was rewritten: %v", m.Header)
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if err := c.validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Concurrency != DefaultConcurrency || c.AckWait != 30*time.Second || c.Names.Prefix() != "jetflow" || c.Logger == nil {
		t.Errorf("defaults %+v", c)
	}
	for name, bad := range map[string]Config{
		"negative concurrency":          {Concurrency: -1},
		"retry cap below delay":         {RetryDelay: time.Second, MaxRetryDelay: time.Millisecond},
		"ack pending below concurrency": {Concurrency: 64, MaxAckPending: 8},
	} {
		if err := bad.WithDefaults().validate(); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
	if _, err := New(nil, nil, nil, Config{}); err == nil {
		t.Error("New accepted a nil registry and JetStream")
	}
}
