package provision

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// ScheduleStreamConfig is the schedule stream (docs/SCHEDULES.md): each
// schedule's definition, a message schedule the server fires while the
// schedule is active; its fires; the one-shot schedules that delay a
// fire by the schedule's jitter and the fires they produce; operators'
// triggers; and the schedule's state, which dispatchers replace by
// compare-and-swap. Like the timer stream it needs Limits retention,
// DiscardOld, roll-ups and no MaxAge (schedules must outlive any age);
// fires carry a per-message TTL (FiredTimerTTL) in case no dispatcher
// takes them, hence per-message TTLs. It is apart from the timer stream
// because operators publish here: a schedule may only target a subject of
// its own stream, and here those are schedules' fires, never runs'.
func ScheduleStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:              names.ScheduleStream(),
		Description:       "jetflow schedules: definitions (message schedules), fires and state",
		Subjects:          []string{names.SchedulesAll()},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgSize:        maxMsgSize(opts.MaxMsgSize),
		Storage:           opts.Storage,
		Replicas:          opts.Replicas,
		Duplicates:        opts.DuplicateWindow,
		AllowMsgSchedules: true,
		AllowRollup:       true,
		AllowMsgTTL:       true,
		AllowDirect:       true,
	}
}

// ScheduleConsumerConfig is the dispatchers' durable consumer of schedule
// fires: each fire (a server's, a delayed one, a trigger) goes to one
// dispatcher, which acknowledges it once it acted on it; a fire held for
// a buffer-one schedule is redelivered (a nak with a delay) until the run
// before it settles, so deliveries are unbounded.
func ScheduleConsumerConfig(names subjects.Names, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        names.ScheduleConsumer(),
		Description:    "jetflow dispatchers: schedule fires",
		FilterSubjects: names.ScheduleFires(),
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        ackWait,
		MaxDeliver:     -1,
		MaxAckPending:  ScheduleMaxAckPending,
	}
}

// ScheduleMaxAckPending bounds the fires the dispatchers hold at once
// (held buffer-one starts among them).
const ScheduleMaxAckPending = 1000
