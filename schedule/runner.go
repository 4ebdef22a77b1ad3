package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/lifecycle"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// MaxCatchUp is how many runs one fire starts at most under catch-up
// all: the fire's own and the times the server skipped before it.
const MaxCatchUp = 100

// startGrace is how long a run the schedule started may have no record
// and still count as unsettled: its start is on its way to a dispatcher.
const startGrace = time.Minute

// maxPending bounds a schedule's starts decided but not yet acknowledged
// (wire.ScheduleState.Pending). Every fire sends them before it decides
// anything, so the list holds about one entry per dispatcher whose
// publish failed; at the bound a fire decides nothing new and comes back.
const maxPending = MaxCatchUp

// maxRecheck caps the wait between two looks at the run a buffer-one
// schedule's waiting start waits for.
const maxRecheck = 15 * time.Second

// headerRecheck counts the looks a waiting start has had (its delay
// doubles with each).
const headerRecheck = "Jetflow-Schedule-Recheck"

// Config configures a Runner.
type Config struct {
	// Off turns the runner off: this process takes no fires. Default false.
	Off bool
	// Names builds every name. Default: subjects.Must("").
	Names subjects.Names
	// Logger receives a line per fire acted on; each carries schedule.
	// Default: slog.Default().
	Logger *slog.Logger
	// Clock paces retries and tells the time fires are judged at.
	// Default: clock.Real{}.
	Clock clock.Clock
	// AckWait is the schedule consumer's: how long a fire a dispatcher
	// died holding waits before another takes it. Default: 30s.
	AckWait time.Duration
	// OpTimeout bounds each NATS round trip. Default: 5s.
	OpTimeout time.Duration
	// LateAfter is how long after its time a fire may be taken and still
	// count as on time (a fire taken after the schedule's next fire was
	// due is late too); a late fire is judged by the schedule's catch-up
	// policy. Default: DefaultLateAfter.
	LateAfter time.Duration
}

// DefaultLateAfter is Config.LateAfter's default.
const DefaultLateAfter = time.Minute

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.LateAfter <= 0 {
		c.LateAfter = DefaultLateAfter
	}
	return c
}

// Runner takes schedule fires from the schedule stream's durable
// consumer, one at a time, and starts their runs. Every dispatcher runs
// one; each fire reaches one of them, and comes back to another if the
// one holding it dies.
type Runner struct {
	js  jetstream.JetStream
	cfg Config
	c   *client.Client
	log *slog.Logger

	run lifecycle.Loop
	mu  sync.Mutex // guards it
	it  jetstream.MessagesContext

	// publishHook, when set (tests only), runs before each start and
	// each delay is published, with the publish's context and the
	// message's subject; an error fails the publish.
	publishHook func(ctx context.Context, subject string) error
}

// New returns a runner; c reads the status of the runs schedules started.
func New(js jetstream.JetStream, c *client.Client, cfg Config) *Runner {
	cfg = cfg.WithDefaults()
	return &Runner{js: js, cfg: cfg, c: c, log: cfg.Logger}
}

// Start runs the runner in the background until Stop. It never fails: a
// deployment without a schedule stream (provisioned before schedules) is
// looked at again, with a growing delay.
func (r *Runner) Start() {
	if r.cfg.Off {
		return
	}
	r.run.Start(r.loop)
}

// Stop ends the runner and waits for the fire in hand; one not yet acted
// on goes to another dispatcher after the consumer's AckWait.
func (r *Runner) Stop() {
	r.run.Stop(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.it != nil {
			r.it.Stop()
			r.it = nil
		}
	})
}

func (r *Runner) loop(ctx context.Context) {
	store, it, err := r.bind(ctx)
	if err != nil {
		return // stopped before binding
	}
	for {
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
			return
		}
		if err != nil {
			r.log.Warn("schedule: consume fires", slog.Any("error", err))
			continue
		}
		r.handle(ctx, store, m)
	}
}

// bind opens the store and the consumer, retrying until both are there
// or ctx ends.
func (r *Runner) bind(ctx context.Context) (*Store, jetstream.MessagesContext, error) {
	var store *Store
	var it jetstream.MessagesContext
	warned := false
	op := func() error {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		defer cancel()
		var err error
		if store, err = Open(cctx, r.js, r.cfg.Names); err != nil {
			return err
		}
		cons, err := r.js.CreateOrUpdateConsumer(cctx, r.cfg.Names.ScheduleStream(), provision.ScheduleConsumerConfig(r.cfg.Names, r.cfg.AckWait))
		if err != nil {
			return fmt.Errorf("schedule: create consumer %q: %w", r.cfg.Names.ScheduleConsumer(), err)
		}
		if it, err = cons.Messages(jetstream.PullMaxMessages(1), jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat)); err != nil {
			return fmt.Errorf("schedule: consume fires: %w", err)
		}
		return nil
	}
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond), backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0)), ctx)
	notify := func(err error, next time.Duration) {
		if !warned {
			r.log.Warn("schedule: fires are not taken yet; other dispatchers take them meanwhile", slog.Any("error", err), slog.Duration("retry_in", next))
			warned = true
		}
	}
	if err := backoff.RetryNotifyWithTimer(op, b, notify, &clock.RetryTimer{Clock: r.cfg.Clock}); err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		it.Stop()
		return nil, nil, err
	}
	r.it = it
	return store, it, nil
}

// handle acts on one fire and acknowledges it, then deletes it from the
// stream (its TTL would, later); an error leaves it to come back.
func (r *Runner) handle(ctx context.Context, store *Store, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	name, kind, ok := r.cfg.Names.ParseScheduleSubject(m.Subject())
	if !ok {
		_ = m.Term()
		return
	}
	log := r.log.With(slog.String("schedule", name), slog.String("fire", kind), slog.Uint64("seq", meta.Sequence.Stream))
	if err := r.act(ctx, store, name, kind, m, meta, log); err != nil {
		if ctx.Err() == nil {
			log.Warn("schedule: fire not handled; it comes back", slog.Any("error", err))
			_ = m.NakWithDelay(time.Second)
		}
		return
	}
	actx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	if err := m.DoubleAck(actx); err != nil {
		log.Warn("schedule: acknowledge fire", slog.Any("error", err))
		return
	}
	if err := store.stream.DeleteMsg(actx, meta.Sequence.Stream); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		log.Debug("schedule: delete handled fire (its TTL removes it)", slog.Any("error", err))
	}
}

// act decides what a fire does. A nil error means the fire is done with.
func (r *Runner) act(ctx context.Context, store *Store, name, kind string, m jetstream.Msg, meta *jetstream.MsgMetadata, log *slog.Logger) error {
	octx, cancel := context.WithTimeout(ctx, 4*r.cfg.OpTimeout)
	defer cancel()
	info, err := store.Get(octx, name)
	if errors.Is(err, ErrNotFound) {
		log.Info("schedule: fire of a deleted schedule dropped")
		return nil
	}
	if err != nil {
		return err
	}
	// Starts decided earlier whose publish was never acknowledged go
	// first, whatever this fire turns out to be (paused or late ones
	// included): a decided start is never forgotten.
	sent, err := r.resend(octx, store, info, log)
	if err != nil {
		return err
	}
	now := r.cfg.Clock.Now().UTC()
	switch kind {
	case "trigger":
		slot, err := time.Parse(time.RFC3339Nano, m.Headers().Get(wire.HeaderScheduleSlot))
		if err != nil {
			log.Warn("schedule: trigger without a time dropped", slog.Any("error", err))
			return nil
		}
		return r.start(octx, store, info, slot, TriggerRunID(name, slot), wire.OverlapAllow, 0, sent, log)
	case "jitter":
		if info.Def.Paused {
			log.Info("schedule: delayed fire of a paused schedule dropped")
			return nil
		}
		slot, err := time.Parse(time.RFC3339Nano, m.Headers().Get(wire.HeaderScheduleSlot))
		if err != nil {
			log.Warn("schedule: delayed fire without a time dropped", slog.Any("error", err))
			return nil
		}
		n, _ := strconv.Atoi(m.Headers().Get(headerRecheck))
		return r.start(octx, store, info, slot, RunID(name, slot), info.Def.Overlap, n, sent, log)
	case "fire":
	default:
		log.Warn("schedule: unknown fire subject dropped")
		return nil
	}
	if info.Def.Paused {
		log.Info("schedule: fire of a paused schedule dropped")
		return nil
	}
	next, err := time.Parse(time.RFC3339Nano, m.Headers().Get(wire.HeaderScheduleNext))
	if err != nil {
		log.Warn("schedule: fire without a next time dropped (not made by a repeating schedule)", slog.Any("error", err))
		return nil
	}
	due := info.Spec.Slot(next)
	slot := info.Spec.Align(due, info.armedAt())
	armed := info.armedAt().Add(-time.Second)
	if due.Before(armed) {
		log.Info("schedule: fire from before the schedule was last armed dropped", slog.Time("slot", slot))
		return nil
	}
	if sent[RunID(name, slot)] {
		// This fire came back after its start's publish failed, and
		// the start has just gone: so did those of any catch-up before
		// it, decided first.
		log.Info("schedule: fire whose start was just sent again is done", slog.Time("slot", slot))
		return nil
	}
	if last, err := time.Parse(time.RFC3339Nano, info.State.LastSlot); err == nil {
		// An older fire may be one a dispatcher died holding, taken
		// again after a later one: it is judged as any other.
		if slot.Equal(last) && info.State.LastRun != RunID(name, slot) {
			log.Info("schedule: duplicate of a fire already acted on dropped", slog.Time("slot", slot))
			return nil
		}
	}
	if slices.Contains(info.State.Skips, slot.UTC().Format(time.RFC3339Nano)) {
		log.Info("schedule: fire already dropped taken again: dropped", slog.Time("slot", slot))
		return nil
	}
	// Late: taken after the next fire was due, or more than LateAfter
	// after its time (no dispatcher was running, or the server made it
	// late, having been down itself).
	if late := !now.Before(next) || now.Sub(due) > r.cfg.LateAfter; late {
		switch info.Def.CatchUp {
		case wire.CatchUpNone:
			return r.skip(octx, store, name, slot, fmt.Sprintf("catch-up none: the fire for %s was taken late, at %s", slot.Format(time.RFC3339), now.Format(time.RFC3339)), log)
		case wire.CatchUpOne:
			later, err := r.laterFire(octx, store, name, meta.Sequence.Stream)
			if err != nil {
				return err
			}
			if later {
				return r.skip(octx, store, name, slot, fmt.Sprintf("catch-up one: the fire for %s was taken late, and a later fire waits", slot.Format(time.RFC3339)), log)
			}
		}
	}
	slots := []time.Time{slot}
	if info.Def.CatchUp == wire.CatchUpAll {
		floor := info.armedAt().Round(time.Second)
		if last, err := time.Parse(time.RFC3339Nano, info.State.LastSlot); err == nil && last.After(floor) {
			floor = last
		}
		slots = append(info.Spec.Between(floor, slot, MaxCatchUp-1), slot)
		if len(slots) > 1 {
			log.Info("schedule: catching up fire times the server skipped", slog.Int("times", len(slots)-1))
		}
	}
	if j := jitterOf(info.Def); j > 0 {
		for _, s := range slots {
			if err := r.delay(octx, store, name, s, s.Add(JitterDelay(name, s, j)), 0); err != nil {
				return err
			}
		}
		return r.update(octx, store, name, func(st *wire.ScheduleState) bool { return advance(st, slots[len(slots)-1]) })
	}
	for _, s := range slots {
		if err := r.start(octx, store, info, s, RunID(name, s), info.Def.Overlap, 0, sent, log); err != nil {
			return err
		}
	}
	return nil
}

// laterFire reports whether the stream holds a fire of the schedule
// after the one at seq: a backlog, of which catch-up one starts the last.
func (r *Runner) laterFire(ctx context.Context, store *Store, name string, seq uint64) (bool, error) {
	raw, err := store.stream.GetLastMsgForSubject(ctx, r.cfg.Names.ScheduleFire(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("schedule: read the last fire of %s: %w", name, err)
	}
	return raw.Sequence > seq, nil
}

// delay publishes the one-shot schedule that brings the fire for slot
// back at at (its jitter, or a waiting start's next look); one per
// slot, so publishing it again replaces it.
func (r *Runner) delay(ctx context.Context, store *Store, name string, slot, at time.Time, recheck int) error {
	m := nats.NewMsg(r.cfg.Names.ScheduleJitterAt(name, strconv.FormatInt(slot.Unix(), 10)))
	m.Header.Set(wire.HeaderSchedule, "@at "+at.UTC().Format(time.RFC3339Nano))
	m.Header.Set(wire.HeaderScheduleTarget, r.cfg.Names.ScheduleJitter(name))
	m.Header.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
	m.Header.Set(wire.HeaderScheduleSlot, slot.UTC().Format(time.RFC3339Nano))
	if recheck > 0 {
		m.Header.Set(headerRecheck, strconv.Itoa(recheck))
	}
	if err := r.publish(ctx, m); err != nil {
		return fmt.Errorf("schedule: delay the fire of %s for %s: %w", name, slot.Format(time.RFC3339), err)
	}
	return nil
}

// advance moves the state's last fire time to slot if it is later.
func advance(st *wire.ScheduleState, slot time.Time) bool {
	last, err := time.Parse(time.RFC3339Nano, st.LastSlot)
	if err == nil && !slot.After(last) {
		return false
	}
	st.LastSlot = slot.UTC().Format(time.RFC3339Nano)
	return true
}

// update changes the schedule's state by compare-and-swap, retrying a
// lost one; change returns false to write nothing.
func (r *Runner) update(ctx context.Context, store *Store, name string, change func(*wire.ScheduleState) bool) error {
	for range 20 {
		st, seq, err := store.state(ctx, name)
		if err != nil {
			return err
		}
		if !change(&st) {
			return nil
		}
		err = store.saveState(ctx, name, st, seq)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("schedule: state of %s: %w", name, ErrConflict)
}

// skip records a fire dropped by policy.
func (r *Runner) skip(ctx context.Context, store *Store, name string, slot time.Time, why string, log *slog.Logger) error {
	log.Info("schedule: fire skipped", slog.String("why", why))
	return r.update(ctx, store, name, func(st *wire.ScheduleState) bool {
		advance(st, slot)
		if st.Waiting == slot.UTC().Format(time.RFC3339Nano) {
			st.Waiting = "" // a waiting start dropped (its overlap changed)
		}
		st.Skipped++
		st.LastSkip = why
		if text := slot.UTC().Format(time.RFC3339Nano); !slices.Contains(st.Skips, text) {
			st.Skips = append(st.Skips, text)
			if n := len(st.Skips) - wire.MaxSkips; n > 0 {
				st.Skips = slices.Delete(st.Skips, 0, n)
			}
		}
		return true
	})
}

// start starts the run of the fire for slot, judged against the
// schedule's previous run by overlap. The decision is saved, with the
// start among the state's pending ones, before the start is published,
// and the start leaves the pending ones once the input stream
// acknowledged it. A publish that fails, or a dispatcher that dies before
// it, leaves the start pending: the next fire of the schedule, on any
// dispatcher (this one's redelivery included), publishes it again first
// (resend). A start published twice is dropped by the input stream (the
// start's message id) or by the dispatcher (the run exists). sent are
// the runs whose start this fire has just sent again: decided already.
func (r *Runner) start(ctx context.Context, store *Store, info *Info, slot time.Time, runID, overlap string, recheck int, sent map[string]bool, log *slog.Logger) error {
	name := info.Def.Name
	slotText := slot.UTC().Format(time.RFC3339Nano)
	if sent[runID] {
		log.Info("schedule: fire of a run whose start was just sent again is done", slog.String("run_id", runID))
		return nil
	}
	for range 20 {
		st, seq, err := store.state(ctx, name)
		if err != nil {
			return err
		}
		if runID == RunID(name, slot) && slices.Contains(st.Skips, slotText) {
			log.Info("schedule: fire already dropped taken again: dropped", slog.Time("slot", slot))
			return nil
		}
		if st.LastRun == runID || pendingIndex(st, runID) >= 0 {
			log.Info("schedule: fire of a run already started; its start goes again, and is dropped as a duplicate", slog.String("run_id", runID))
			return r.send(ctx, store, info.Def, runID)
		}
		if last, err := time.Parse(time.RFC3339Nano, st.LastSlot); err == nil && slot.Before(last) {
			// An older fire: a duplicate if its run exists.
			if _, err := r.c.Status(ctx, runID); err == nil || errors.Is(err, runrecord.ErrRemoved) {
				log.Info("schedule: duplicate fire of a run already started dropped", slog.String("run_id", runID))
				return nil
			}
		}
		waiting := st.Waiting != "" && st.Waiting != slotText
		busy := false
		if overlap != wire.OverlapAllow && st.LastRun != "" {
			if busy, err = r.unsettled(ctx, st); err != nil {
				return err
			}
		}
		switch {
		case overlap == wire.OverlapBufferOne && waiting:
			return r.skip(ctx, store, name, slot, "buffer-one: the start for "+st.Waiting+" already waits", log)
		case busy && overlap == wire.OverlapSkip:
			return r.skip(ctx, store, name, slot, "overlap skip: run "+st.LastRun+" has not settled", log)
		case busy:
			// buffer-one: this start waits; a delayed fire looks again.
			// The delay goes before the wait is saved, so that a waiting
			// start always has the fire that ends its wait: a wait saved
			// without it would hold every later fire back for good. A
			// delay whose wait is not saved (the dispatcher died) is a
			// fire judged as any other.
			wait := min(time.Second<<min(recheck, 10), maxRecheck)
			if err := r.delay(ctx, store, name, slot, r.cfg.Clock.Now().Add(wait), recheck+1); err != nil {
				return err
			}
			if st.Waiting != slotText {
				st.Waiting = slotText
				advance(&st, slot)
				if err := store.saveState(ctx, name, st, seq); errors.Is(err, ErrConflict) {
					continue
				} else if err != nil {
					return err
				}
				log.Info("schedule: start waits for the previous run", slog.String("run_id", runID), slog.String("previous", st.LastRun))
			}
			return nil
		}
		// An older fire's run (one taken again after a later one) does
		// not become the last run: overlap judges against the latest.
		if last, err := time.Parse(time.RFC3339Nano, st.LastSlot); err != nil || !slot.Before(last) || st.LastRun == "" {
			st.LastRun = runID
			st.LastStarted = r.cfg.Clock.Now().UTC().Format(time.RFC3339Nano)
		}
		if len(st.Pending) >= maxPending {
			return fmt.Errorf("schedule: %s has %d starts the input stream has not acknowledged (at most %d): this fire comes back once they are sent", name, len(st.Pending), maxPending)
		}
		st.Started++
		if st.Waiting == slotText {
			st.Waiting = ""
		}
		advance(&st, slot)
		st.Pending = append(st.Pending, wire.PendingStart{Run: runID, Slot: slotText})
		if err := store.saveState(ctx, name, st, seq); errors.Is(err, ErrConflict) {
			continue
		} else if err != nil {
			return err
		}
		log.Info("schedule: run started", slog.String("run_id", runID), slog.Time("slot", slot))
		return r.send(ctx, store, info.Def, runID)
	}
	return fmt.Errorf("schedule: state of %s: %w", name, ErrConflict)
}

// send publishes the start of run runID, decided and saved, and once the
// input stream acknowledged it takes it off the schedule's pending
// starts. An error leaves it pending: a later fire sends it again.
func (r *Runner) send(ctx context.Context, store *Store, def wire.Schedule, runID string) error {
	if err := r.publishStart(ctx, def, runID); err != nil {
		return err
	}
	return r.settlePending(ctx, store, def.Name, map[string]bool{runID: true})
}

// resend publishes again, in order, the starts the schedule decided
// whose publish was never acknowledged (it failed, or the dispatcher
// died between saving the decision and publishing), then takes them off
// the pending ones. It returns their run ids; an error leaves those not
// yet acknowledged pending, and the fire comes back.
func (r *Runner) resend(ctx context.Context, store *Store, info *Info, log *slog.Logger) (map[string]bool, error) {
	if len(info.State.Pending) == 0 {
		return nil, nil
	}
	sent := make(map[string]bool, len(info.State.Pending))
	for _, p := range info.State.Pending {
		if sent[p.Run] {
			continue
		}
		if err := r.publishStart(ctx, info.Def, p.Run); err != nil {
			if len(sent) > 0 {
				err = errors.Join(err, r.settlePending(ctx, store, info.Def.Name, sent))
			}
			return nil, err
		}
		sent[p.Run] = true
		log.Info("schedule: start sent again: its publish was not acknowledged", slog.String("run_id", p.Run), slog.String("slot", p.Slot))
	}
	if err := r.settlePending(ctx, store, info.Def.Name, sent); err != nil {
		return nil, err
	}
	return sent, nil
}

// settlePending takes the starts of runs, acknowledged by the input
// stream, off the schedule's pending ones in its stored state.
func (r *Runner) settlePending(ctx context.Context, store *Store, name string, runs map[string]bool) error {
	return r.update(ctx, store, name, func(st *wire.ScheduleState) bool { return settle(st, runs) })
}

// settle takes the starts of runs off the state's pending ones,
// reporting whether any was there.
func settle(st *wire.ScheduleState, runs map[string]bool) bool {
	n := len(st.Pending)
	st.Pending = slices.DeleteFunc(st.Pending, func(p wire.PendingStart) bool { return runs[p.Run] })
	if len(st.Pending) == 0 {
		st.Pending = nil
	}
	return len(st.Pending) != n
}

// pendingIndex is the index of run runID among the state's pending
// starts, or -1.
func pendingIndex(st wire.ScheduleState, runID string) int {
	return slices.IndexFunc(st.Pending, func(p wire.PendingStart) bool { return p.Run == runID })
}

// unsettled reports whether the schedule's last run has yet to settle.
// A run without a record counts as unsettled for a minute after its
// start was published (the start is on its way), and as settled after
// (its start was refused, or retention removed it).
func (r *Runner) unsettled(ctx context.Context, st wire.ScheduleState) (bool, error) {
	status, err := r.c.Status(ctx, st.LastRun)
	switch {
	case errors.Is(err, client.ErrRunNotFound):
		started, perr := time.Parse(time.RFC3339Nano, st.LastStarted)
		return perr == nil && r.cfg.Clock.Now().Sub(started) < startGrace, nil
	case errors.Is(err, runrecord.ErrRemoved):
		return false, nil
	case err != nil:
		return false, err
	}
	return !run.Status(status.Status).Terminal(), nil
}

// publishStart publishes the run's start with a message id of its own,
// so that the input stream drops a second one within its duplicate
// window.
func (r *Runner) publishStart(ctx context.Context, def wire.Schedule, runID string) error {
	data, err := json.Marshal(wire.Start{Workflow: def.Workflow, Input: def.Input})
	if err != nil {
		return err
	}
	m := nats.NewMsg(r.cfg.Names.Start(runID))
	m.Data = data
	m.Header.Set(wire.HeaderMsgID, subjects.KindStart+"/"+runID+"/schedule")
	if err := r.publish(ctx, m); err != nil {
		return fmt.Errorf("schedule: start run %s: %w", runID, err)
	}
	return nil
}

// publish publishes m to its stream and waits for the acknowledgement.
func (r *Runner) publish(ctx context.Context, m *nats.Msg) error {
	if r.publishHook != nil {
		if err := r.publishHook(ctx, m.Subject); err != nil {
			return err
		}
	}
	_, err := r.js.PublishMsg(ctx, m)
	return err
}
