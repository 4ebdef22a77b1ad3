package wire

import "encoding/json"

// Headers of the schedule stream (docs/SCHEDULES.md) jetflow reads on a
// fire: the server's own on every fire it produces, and jetflow's on a
// delayed fire and a trigger.
const (
	// HeaderScheduleNext is set by the server on a fire: the time of the
	// schedule's next fire (RFC 3339), or "purge" for a one-shot.
	HeaderScheduleNext = "Nats-Schedule-Next"
	// HeaderScheduler is set by the server on a fire: the subject of the
	// schedule that produced it.
	HeaderScheduler = "Nats-Scheduler"
	// HeaderScheduleSlot is the fire time (RFC 3339) a delayed fire or a
	// trigger stands for; the run started for it has an id derived from it.
	HeaderScheduleSlot = "Jetflow-Schedule-Slot"
	// HeaderExpectedLastSubjectSeq makes a publish conditional on the
	// subject's last sequence (0: the subject is empty).
	HeaderExpectedLastSubjectSeq = "Nats-Expected-Last-Subject-Sequence"
)

// Overlap policies of a schedule: what a fire does while the run the
// schedule started last has not settled.
const (
	OverlapSkip      = "skip"
	OverlapBufferOne = "buffer-one"
	OverlapAllow     = "allow"
)

// Catch-up policies of a schedule: which fires start runs when they are
// taken late (no dispatcher was running when they were due).
const (
	CatchUpNone = "none"
	CatchUpOne  = "one"
	CatchUpAll  = "all"
)

// Schedule is a schedule's definition, the body of its definition
// message (and so of every fire the server copies from it).
type Schedule struct {
	Name     string `json:"name"`
	Workflow string `json:"workflow"`
	// Cron is a six-field cron expression (seconds first) or a
	// predefined one (@hourly ...); Every a Go duration of at least 1s.
	// Exactly one is set.
	Cron  string `json:"cron,omitempty"`
	Every string `json:"every,omitempty"`
	// TimeZone is the IANA zone Cron is read in (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
	// Input is every run's input (absent means null).
	Input json.RawMessage `json:"input,omitempty"`
	// Jitter is a Go duration: each fire's run starts up to this much
	// later, by an amount derived from the name and the fire time.
	Jitter  string `json:"jitter,omitempty"`
	Overlap string `json:"overlap"`
	CatchUp string `json:"catchUp"`
	// Paused is true while the schedule fires nothing.
	Paused bool `json:"paused,omitempty"`
	// Created and Armed are RFC 3339 times: when the schedule was
	// created, and when it was last created or resumed (no fire before
	// Armed is caught up).
	Created string `json:"created"`
	Armed   string `json:"armed"`
	// By is who created, paused or resumed it last.
	By string `json:"by,omitempty"`
}

// ScheduleState is what the dispatchers record of a schedule, replaced
// by compare-and-swap at each fire it acts on.
type ScheduleState struct {
	// LastSlot is the latest fire time acted on (RFC 3339).
	LastSlot string `json:"lastSlot,omitempty"`
	// LastRun is the run started last, LastStarted when (RFC 3339).
	LastRun     string `json:"lastRun,omitempty"`
	LastStarted string `json:"lastStarted,omitempty"`
	// Waiting is the fire time of the one start a buffer-one schedule
	// holds until LastRun settles.
	Waiting string `json:"waiting,omitempty"`
	// Started, Skipped counts runs started and fires dropped (overlap,
	// catch-up); LastSkip says why the last was dropped.
	Started  int    `json:"started"`
	Skipped  int    `json:"skipped"`
	LastSkip string `json:"lastSkip,omitempty"`
	// Pending are the starts decided (counted in Started) whose publish
	// the input stream has not acknowledged yet, oldest first: every
	// fire of the schedule, on any dispatcher, publishes them again
	// before it acts, and an entry leaves only once a publish of its
	// start was acknowledged. Absent from states stored before it.
	Pending []PendingStart `json:"pending,omitempty"`
	// Skips are the fire times (RFC 3339) of the latest fires dropped,
	// at most MaxSkips, oldest first: a dropped fire taken again (its
	// acknowledgement was lost) is then not judged a second time, which
	// would count it twice or start the run it dropped. Absent from
	// states stored before it.
	Skips []string `json:"skips,omitempty"`
}

// MaxSkips bounds ScheduleState.Skips.
const MaxSkips = 32

// PendingStart is a run start a schedule decided and whose publish has
// not been acknowledged: the run's id and the fire time it stands for
// (RFC 3339; a trigger's time for a trigger's run).
type PendingStart struct {
	Run  string `json:"run"`
	Slot string `json:"slot"`
}
