package subjects

import (
	"fmt"
	"strings"
)

// Schedules (docs/SCHEDULES.md) live in a stream of their own, apart from
// the timer stream: an operator allowed to create a schedule may publish
// scheduling headers, and in this stream the only subjects a schedule can
// target are other schedules' fires, never a run's timers.

// ScheduleStream holds every schedule: its definition (a message schedule
// while it is active), its fires, its jitter delays and its state.
func (n Names) ScheduleStream() string { return n.prefix + "_schedules" }

// SchedulesAll matches every subject of the schedule stream.
func (n Names) SchedulesAll() string { return n.prefix + ".schedule.>" }

// ScheduleDef is the subject of a schedule's definition: a message
// schedule (Nats-Schedule) while the schedule is active, a plain message
// while it is paused. One message lives on it (each replaces the last).
func (n Names) ScheduleDef(name string) string { return n.prefix + ".schedule." + name + ".def" }

// ScheduleDefs matches every schedule's definition.
func (n Names) ScheduleDefs() string { return n.prefix + ".schedule.*.def" }

// ScheduleFire is where the server produces a schedule's fires (the
// definition's Nats-Schedule-Target).
func (n Names) ScheduleFire(name string) string { return n.prefix + ".schedule." + name + ".fire" }

// ScheduleJitter is where a fire delayed by the schedule's jitter
// arrives, produced by a one-shot schedule (ScheduleJitterAt).
func (n Names) ScheduleJitter(name string) string {
	return n.prefix + ".schedule." + name + ".jitter"
}

// ScheduleJitterAt is the one-shot schedule that delays the fire of one
// slot (Unix seconds) by the schedule's jitter; one per slot, so that a
// duplicate fire replaces it instead of adding another.
func (n Names) ScheduleJitterAt(name, slot string) string {
	return n.prefix + ".schedule." + name + ".jit." + slot
}

// ScheduleTrigger is where an operator's trigger (a fire now, outside the
// schedule's times) goes.
func (n Names) ScheduleTrigger(name string) string {
	return n.prefix + ".schedule." + name + ".trigger"
}

// ScheduleFires match every fire, delayed fire and trigger: the filters
// of the dispatchers' schedule consumer.
func (n Names) ScheduleFires() []string {
	return []string{n.prefix + ".schedule.*.fire", n.prefix + ".schedule.*.jitter", n.prefix + ".schedule.*.trigger"}
}

// ScheduleState is the subject of a schedule's state (its last fire, its
// last run, its waiting start), which dispatchers replace by
// compare-and-swap on its subject sequence.
func (n Names) ScheduleState(name string) string { return n.prefix + ".schedule." + name + ".state" }

// ScheduleSubjects matches every subject of one schedule: what deleting
// it purges.
func (n Names) ScheduleSubjects(name string) string { return n.prefix + ".schedule." + name + ".>" }

// ParseScheduleSubject returns the schedule name and the last token
// ("def", "fire", "jitter", "trigger", "state") of a subject of the
// schedule stream.
func (n Names) ParseScheduleSubject(subject string) (name, kind string, ok bool) {
	rest, found := strings.CutPrefix(subject, n.prefix+".schedule.")
	if !found {
		return "", "", false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] == '.' {
			return rest[:i], rest[i+1:], i > 0 && i+1 < len(rest)
		}
	}
	return "", "", false
}

// ScheduleConsumer is the durable consumer of the schedule stream that
// hands each fire to one dispatcher.
func (n Names) ScheduleConsumer() string { return "scheduler" }

// CheckScheduleName refuses a schedule name that cannot be one subject
// token, or is too long for the run ids derived from it (a name, '-' and
// a fire time).
func CheckScheduleName(name string) error {
	if err := checkToken("schedule name", name); err != nil {
		return err
	}
	if len(name) > MaxScheduleName {
		return fmt.Errorf("%w: schedule name %q is longer than %d bytes (its runs' ids add a fire time)", ErrInvalid, name, MaxScheduleName)
	}
	return nil
}

// MaxScheduleName is the longest schedule name: its runs' ids add '-'
// and a fire time of at most 27 bytes.
const MaxScheduleName = MaxToken - 28
