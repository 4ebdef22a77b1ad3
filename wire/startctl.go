package wire

import (
	"errors"
	"fmt"
	"time"
)

// HeaderHeld marks a start the dispatchers held back as a message
// schedule in the timer stream, and so the copy the server fires into the
// input stream on the run's timer subject: it is the start again, its
// body unchanged. Its value says why it was held: HeldDebounce or
// HeldSingleton (docs/STARTS.md).
const HeaderHeld = "Jetflow-Held"

// HeaderHeldRound counts how often a queued start has looked before
// ("0" the first time it is held).
const HeaderHeldRound = "Jetflow-Held-Round"

// Values of HeaderHeld.
const (
	// HeldDebounce: the last start of a burst, fired its delay after it.
	HeldDebounce = "debounce"
	// HeldSingleton: a start queued behind the active run of its
	// singleton key, fired to look again.
	HeldSingleton = "singleton"
)

// Singleton modes.
const (
	// SingletonRefuse refuses a start while another run of the key is
	// active (the default).
	SingletonRefuse = "refuse"
	// SingletonQueue holds the start until the active run settles.
	SingletonQueue = "queue"
)

// Singleton allows at most one active (not settled) run per key.
type Singleton struct {
	// Key names the singleton: at most one run started with it is
	// active at a time.
	Key string `json:"key"`
	// Mode is SingletonRefuse (empty is the same) or SingletonQueue.
	Mode string `json:"mode,omitempty"`
}

// Debounce replaces a start by the next one with the same key within
// Ms milliseconds: only the last start of a burst runs, Ms after it.
type Debounce struct {
	Key string  `json:"key"`
	Ms  float64 `json:"ms"`
}

// StartDecision is what the dispatchers decided about a start that did
// not start its run (or not yet), kept in the start key bucket under
// subjects.Names.StartDecisionKey(run) for the idempotency window: the
// answer of `jetflow start` and the client, and what `status` shows for
// a run id that has no run.
type StartDecision struct {
	// Outcome is one of the StartOutcome* values.
	Outcome string `json:"outcome"`
	// Run is the run the decision names: the first run of the
	// idempotency key, or the active run of the singleton key.
	Run string `json:"run,omitempty"`
	// Key is the idempotency, singleton or debounce key.
	Key string `json:"key"`
	// Due is when a held start fires, Unix milliseconds.
	Due float64 `json:"due,omitempty"`
	// At is when the decision was made (the start's stream time), Unix
	// milliseconds.
	At float64 `json:"at"`
}

// Outcomes of a StartDecision.
const (
	// StartOutcomeDuplicate: the idempotency key started Run before;
	// this start started nothing.
	StartOutcomeDuplicate = "duplicate"
	// StartOutcomeRefused: Run holds the singleton key and has not
	// settled; this start started nothing.
	StartOutcomeRefused = "refused"
	// StartOutcomeQueued: Run holds the singleton key; this start is
	// held and starts once Run settles.
	StartOutcomeQueued = "queued"
	// StartOutcomeDebounced: the start is held until Due; a later start
	// with the same debounce key before then replaces it.
	StartOutcomeDebounced = "debounced"
	// StartOutcomeReplaced: a later start with the same debounce key,
	// of run Run, replaced this held one, which will not start.
	StartOutcomeReplaced = "replaced"
)

// MaxKey bounds a key's length in bytes.
const MaxKey = 1024

// MaxDebounce bounds a debounce delay.
const MaxDebounce = 24 * time.Hour

// CheckControls refuses controls no dispatcher can apply, naming the member.
func (s *Start) CheckControls() error {
	if s.IdempotencyKey != "" && len(s.IdempotencyKey) > MaxKey {
		return fmt.Errorf("idempotencyKey is %d bytes, more than %d", len(s.IdempotencyKey), MaxKey)
	}
	if g := s.Singleton; g != nil {
		switch {
		case g.Key == "":
			return errors.New("singleton.key is empty")
		case len(g.Key) > MaxKey:
			return fmt.Errorf("singleton.key is %d bytes, more than %d", len(g.Key), MaxKey)
		case g.Mode != "" && g.Mode != SingletonRefuse && g.Mode != SingletonQueue:
			return fmt.Errorf("singleton.mode %q is neither %q nor %q", g.Mode, SingletonRefuse, SingletonQueue)
		}
	}
	if d := s.Debounce; d != nil {
		switch {
		case d.Key == "":
			return errors.New("debounce.key is empty")
		case len(d.Key) > MaxKey:
			return fmt.Errorf("debounce.key is %d bytes, more than %d", len(d.Key), MaxKey)
		case d.Ms <= 0 || time.Duration(d.Ms*float64(time.Millisecond)) > MaxDebounce:
			return fmt.Errorf("debounce.ms %v is not between 0 (excluded) and %d (24 h)", d.Ms, MaxDebounce.Milliseconds())
		}
	}
	return nil
}
