package wire

import (
	"strconv"
	"time"
)

// Headers nats-server interprets that jetflow sets: the message
// scheduler's (ADR-51) on a timer's schedule, and the per-message TTL
// and roll-up that disarm one. Every package that writes or rewrites
// them names them here.
const (
	HeaderSchedule         = "Nats-Schedule"
	HeaderScheduleTarget   = "Nats-Schedule-Target"
	HeaderScheduleTTL      = "Nats-Schedule-TTL"
	HeaderScheduleTimeZone = "Nats-Schedule-Time-Zone"
	HeaderRollup           = "Nats-Rollup"
	HeaderTTL              = "Nats-TTL"
)

// FiredTimerTTL is how long the timer stream keeps a fired timer for the
// input stream to copy (each schedule's Nats-Schedule-TTL). The copy
// normally takes milliseconds: only an input stream that stays
// unavailable this long loses a fire.
const FiredTimerTTL = 7 * 24 * time.Hour

// FiredTimerTTLValue is FiredTimerTTL as a Nats-Schedule-TTL header
// value (seconds).
var FiredTimerTTLValue = strconv.FormatInt(int64(FiredTimerTTL/time.Second), 10)
