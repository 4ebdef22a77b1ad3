package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Sentinels of the store.
var (
	// ErrNotFound: no schedule has the name.
	ErrNotFound = errors.New("schedule not found")
	// ErrExists: a schedule of the name exists already (Create).
	ErrExists = errors.New("schedule already exists")
	// ErrConflict: the schedule changed between a read and a write (a
	// lost compare-and-swap); read it again.
	ErrConflict = errors.New("schedule changed meanwhile")
	// ErrNotProvisioned: the schedule stream is missing; provision again.
	ErrNotProvisioned = kvstore.ErrNotProvisioned
)

// Store creates, reads and changes schedules in the schedule stream.
type Store struct {
	js     jetstream.JetStream
	names  subjects.Names
	stream jetstream.Stream
	now    func() time.Time
}

// Open binds the schedule stream, which Provision makes.
func Open(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*Store, error) {
	s, err := js.Stream(ctx, names.ScheduleStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("schedule: %w: stream %q is missing (made by a jetflow before schedules): provision again, e.g. jetflow dispatcher --provision", ErrNotProvisioned, names.ScheduleStream())
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: bind stream %q: %w", names.ScheduleStream(), err)
	}
	return &Store{js: js, names: names, stream: s, now: time.Now}, nil
}

// Info is one schedule as stored: its definition, the spec it fires by,
// when its definition was stored (an interval counts from there), and
// what the dispatchers recorded of it.
type Info struct {
	Def    wire.Schedule
	Spec   Spec
	Stored time.Time
	State  wire.ScheduleState
	// seq is the definition's stream sequence, stateSeq the state's
	// (0: none yet).
	seq, stateSeq uint64
}

// Next returns the schedule's next n fires after t (none while paused).
// An interval counts from the last fire the dispatchers acted on, or
// from when the schedule was armed.
func (i *Info) Next(t time.Time, n int) []time.Time {
	if i.Def.Paused {
		return nil
	}
	armed := i.Stored
	if last, err := time.Parse(time.RFC3339Nano, i.State.LastSlot); err == nil && last.After(armed) && i.Spec.Every() > 0 {
		armed = last
	}
	var out []time.Time
	for len(out) < n {
		next := i.Spec.Next(t, armed)
		if next.IsZero() {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// Validate checks a definition and fills in its defaults (overlap skip,
// catch-up one), returning the spec it fires by. Errors name the member
// at fault.
func Validate(def *wire.Schedule) (Spec, error) {
	if err := subjects.CheckScheduleName(def.Name); err != nil {
		return Spec{}, err
	}
	if err := subjects.CheckWorkflowName(def.Workflow); err != nil {
		return Spec{}, fmt.Errorf("schedule %s: %w", def.Name, err)
	}
	spec, err := ParseSpec(def.Cron, def.Every, def.TimeZone)
	if err != nil {
		return Spec{}, fmt.Errorf("schedule %s: %w", def.Name, err)
	}
	if len(def.Input) > 0 && !json.Valid(def.Input) {
		return Spec{}, fmt.Errorf("schedule %s: input is not JSON", def.Name)
	}
	if def.Jitter != "" {
		j, err := time.ParseDuration(def.Jitter)
		if err != nil || j < 0 {
			return Spec{}, fmt.Errorf("%w: schedule %s: jitter %q is not a duration of 0 or more (such as 30s)", ErrSpec, def.Name, def.Jitter)
		}
	}
	if def.Overlap == "" {
		def.Overlap = wire.OverlapSkip
	}
	if def.CatchUp == "" {
		def.CatchUp = wire.CatchUpOne
	}
	if !slices.Contains([]string{wire.OverlapSkip, wire.OverlapBufferOne, wire.OverlapAllow}, def.Overlap) {
		return Spec{}, fmt.Errorf("%w: schedule %s: overlap %q is not skip, buffer-one or allow", ErrSpec, def.Name, def.Overlap)
	}
	if !slices.Contains([]string{wire.CatchUpNone, wire.CatchUpOne, wire.CatchUpAll}, def.CatchUp) {
		return Spec{}, fmt.Errorf("%w: schedule %s: catch-up %q is not none, one or all", ErrSpec, def.Name, def.CatchUp)
	}
	return spec, nil
}

// jitterOf is a validated definition's jitter.
func jitterOf(def wire.Schedule) time.Duration {
	j, _ := time.ParseDuration(def.Jitter)
	return j
}

// Create stores a new schedule, active at once: the server fires it from
// now on. A schedule of the same name is refused with ErrExists.
func (s *Store) Create(ctx context.Context, def wire.Schedule) (*Info, error) {
	spec, err := Validate(&def)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC().Format(time.RFC3339Nano)
	def.Created, def.Armed, def.Paused = now, now, false
	if err := s.publishDef(ctx, def, spec, 0); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("schedule: create %s: %w (delete it first, or choose another name)", def.Name, ErrExists)
		}
		return nil, fmt.Errorf("schedule: create %s: %w", def.Name, err)
	}
	return s.Get(ctx, def.Name)
}

// publishDef stores def on its subject if the subject's last sequence is
// expect (0: none), as a message schedule unless def is paused.
func (s *Store) publishDef(ctx context.Context, def wire.Schedule, spec Spec, expect uint64) error {
	data, err := json.Marshal(def)
	if err != nil {
		return err
	}
	m := nats.NewMsg(s.names.ScheduleDef(def.Name))
	m.Data = data
	m.Header.Set(wire.HeaderExpectedLastSubjectSeq, strconv.FormatUint(expect, 10))
	m.Header.Set(wire.HeaderRollup, "sub")
	if !def.Paused {
		m.Header.Set(wire.HeaderSchedule, spec.Header())
		m.Header.Set(wire.HeaderScheduleTarget, s.names.ScheduleFire(def.Name))
		m.Header.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
		if def.TimeZone != "" {
			m.Header.Set(wire.HeaderScheduleTimeZone, def.TimeZone)
		}
	}
	_, err = s.js.PublishMsg(ctx, m)
	return casError(err)
}

// casError turns a refused expected sequence into ErrConflict.
func casError(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// Get reads one schedule, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (*Info, error) {
	if err := subjects.CheckScheduleName(name); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	raw, err := s.stream.GetLastMsgForSubject(ctx, s.names.ScheduleDef(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %q (jetflow schedule list shows them)", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: read %s: %w", name, err)
	}
	info := &Info{Stored: raw.Time, seq: raw.Sequence}
	if err := json.Unmarshal(raw.Data, &info.Def); err != nil {
		return nil, fmt.Errorf("schedule: read %s: definition at sequence %d: %w", name, raw.Sequence, err)
	}
	if info.Spec, err = ParseSpec(info.Def.Cron, info.Def.Every, info.Def.TimeZone); err != nil {
		return nil, fmt.Errorf("schedule: read %s: %w", name, err)
	}
	if info.State, info.stateSeq, err = s.state(ctx, name); err != nil {
		return nil, err
	}
	return info, nil
}

// state reads a schedule's state and its sequence (0 when none yet).
func (s *Store) state(ctx context.Context, name string) (wire.ScheduleState, uint64, error) {
	var st wire.ScheduleState
	raw, err := s.stream.GetLastMsgForSubject(ctx, s.names.ScheduleState(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return st, 0, nil
	}
	if err != nil {
		return st, 0, fmt.Errorf("schedule: read the state of %s: %w", name, err)
	}
	if err := json.Unmarshal(raw.Data, &st); err != nil {
		return st, 0, fmt.Errorf("schedule: state of %s at sequence %d: %w", name, raw.Sequence, err)
	}
	return st, raw.Sequence, nil
}

// saveState replaces a schedule's state if it is still at seq, or
// returns an error wrapping ErrConflict.
func (s *Store) saveState(ctx context.Context, name string, st wire.ScheduleState, seq uint64) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	m := nats.NewMsg(s.names.ScheduleState(name))
	m.Data = data
	m.Header.Set(wire.HeaderExpectedLastSubjectSeq, strconv.FormatUint(seq, 10))
	m.Header.Set(wire.HeaderRollup, "sub")
	_, err = s.js.PublishMsg(ctx, m)
	return casError(err)
}

// List reads every schedule, by name.
func (s *Store) List(ctx context.Context) ([]*Info, error) {
	si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(s.names.ScheduleDefs()))
	if err != nil {
		return nil, fmt.Errorf("schedule: list: %w", err)
	}
	names := make([]string, 0, len(si.State.Subjects))
	for subj := range si.State.Subjects {
		if name, kind, ok := s.names.ParseScheduleSubject(subj); ok && kind == "def" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]*Info, 0, len(names))
	for _, name := range names {
		info, err := s.Get(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Pause stops a schedule's fires: its definition is stored again as a
// plain message, which the server does not fire; fires already made are
// dropped by the dispatchers that take them. Pausing a paused schedule
// does nothing.
func (s *Store) Pause(ctx context.Context, name, by string) (*Info, error) {
	return s.setPaused(ctx, name, by, true)
}

// Resume makes a paused schedule fire again from now on; fires it missed
// while paused are not caught up. Resuming an active schedule does
// nothing.
func (s *Store) Resume(ctx context.Context, name, by string) (*Info, error) {
	return s.setPaused(ctx, name, by, false)
}

func (s *Store) setPaused(ctx context.Context, name, by string, paused bool) (*Info, error) {
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	for range 5 {
		info, err := s.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if info.Def.Paused == paused {
			return info, nil
		}
		def := info.Def
		def.Paused, def.By = paused, by
		if !paused {
			def.Armed = s.now().UTC().Format(time.RFC3339Nano)
		}
		err = s.publishDef(ctx, def, info.Spec, info.seq)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("schedule: %s %s: %w", verb, name, err)
		}
		return s.Get(ctx, name)
	}
	return nil, fmt.Errorf("schedule: %s %s: %w: it kept changing; try again", verb, name, ErrConflict)
}

// Delete removes a schedule: its definition (so the server fires it no
// more), its pending fires and delays, and its state. Runs it started
// are left alone.
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.names.ScheduleSubjects(name))); err != nil {
		return fmt.Errorf("schedule: delete %s: %w", name, err)
	}
	return nil
}

// Trigger asks for one run of the schedule now, outside its times: a
// dispatcher starts it whatever the overlap policy (and even while the
// schedule is paused), as the schedule's latest run. It returns the
// run's id.
func (s *Store) Trigger(ctx context.Context, name, by string) (string, error) {
	if _, err := s.Get(ctx, name); err != nil {
		return "", err
	}
	at := s.now().UTC()
	m := nats.NewMsg(s.names.ScheduleTrigger(name))
	m.Header.Set(wire.HeaderScheduleSlot, at.Format(time.RFC3339Nano))
	if by != "" {
		m.Header.Set(HeaderBy, by)
	}
	if _, err := s.js.PublishMsg(ctx, m); err != nil {
		return "", fmt.Errorf("schedule: trigger %s: %w", name, err)
	}
	return TriggerRunID(name, at), nil
}

// HeaderBy names who triggered a run.
const HeaderBy = "Jetflow-Schedule-By"

// Describe is the spec as a person reads it: "cron 0 0 * * * * (UTC)"
// or "every 30s".
func (i *Info) Describe() string {
	if i.Def.Every != "" {
		return "every " + i.Spec.Every().String()
	}
	tz := i.Def.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return "cron " + strings.TrimSpace(i.Def.Cron) + " (" + tz + ")"
}
