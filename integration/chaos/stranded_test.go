package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// A run that is not settled must have a way forward the deployment takes
// by itself: run.State.Stranded is nil, and every timer it relies on
// (run.State.Timers) is scheduled in the timer stream or has fired and
// waits in the input stream. This file checks that on records sampled
// while runs flow, and on every record of the run bucket at the end.

// Canaries are runs the harness starts after the drain so that the final
// check always has unsettled runs to look at: one waiting on its after
// timer, one running, held by its deadline timer, and a control whose
// schedule the harness purges, which the check must find stranded.
const (
	canaryWait  = "canary-wait"
	canaryStuck = "canary-stuck"
	canaryCut   = "canary-cut"
)

// sampler reads the records of random runs while they flow and checks
// that each unsettled one has a way forward (Stranded).
type sampler struct {
	mu      sync.Mutex
	sampled int
	// stranded says, by run, what the first bad record sampled showed.
	stranded map[string]string
}

// sample runs until ctx ends, reading a record every 250 ms.
func (s *sampler) sample(ctx context.Context, h *harness, d *driver, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	var kv jetstream.KeyValue
	for pause(ctx, 250*time.Millisecond) == nil {
		// The latest runs are the ones most likely still in flight.
		runs := d.all()
		if len(runs) == 0 {
			continue
		}
		runs = runs[max(0, len(runs)-20):]
		id := runs[rng.IntN(len(runs))].id
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var e jetstream.KeyValueEntry
		var err error
		if kv == nil {
			kv, err = h.f.JS.KeyValue(gctx, h.names.RunBucket())
		}
		if err == nil {
			e, err = kv.Get(gctx, id)
		}
		cancel()
		if err != nil {
			continue // not started yet, or the cluster is busy: the next one
		}
		rec, err := runrecord.Decode(e.Value())
		if errors.Is(err, runrecord.ErrRemoved) {
			continue // settled and removed by retention (retention_test.go checks it)
		}
		if err != nil {
			s.add(id, false, fmt.Sprintf("record sampled mid-run (revision %d): %v", e.Revision(), err))
			continue
		}
		st, err := step.DecodeState(rec)
		if err != nil {
			s.add(id, false, fmt.Sprintf("state sampled mid-run (revision %d): %v", e.Revision(), err))
			continue
		}
		if st.Status.Terminal() {
			continue
		}
		if err := st.Stranded(); err != nil {
			s.add(id, true, fmt.Sprintf("stranded in the record sampled mid-run (revision %d): %v", e.Revision(), err))
			continue
		}
		s.add(id, true, "")
	}
}

func (s *sampler) add(runID string, sampled bool, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sampled {
		s.sampled++
	}
	if s.stranded == nil {
		s.stranded = map[string]string{}
	}
	if _, seen := s.stranded[runID]; problem != "" && !seen {
		s.stranded[runID] = problem
	}
}

// result is how many unsettled records were sampled and the problems
// found, by run.
func (s *sampler) result() (int, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled, maps.Clone(s.stranded)
}

// startCanaries starts the canaries and waits until each is at rest with
// its timer scheduled; then it purges canaryCut's schedule.
func (h *harness) startCanaries(ctx context.Context) error {
	for _, c := range []struct{ id, wf string }{{canaryWait, "event"}, {canaryStuck, "stuck"}, {canaryCut, "event"}} {
		// A retried start is a second start message, refused by the run.
		if err := retryFor(ctx, func(ctx context.Context) error {
			return h.client.StartRun(ctx, c.wf, c.id, map[string]any{"n": 0})
		}); err != nil {
			return fmt.Errorf("start canary %s: %w", c.id, err)
		}
	}
	ts, err := h.f.JS.Stream(ctx, h.names.TimerStream())
	if err != nil {
		return err
	}
	for _, id := range []string{canaryWait, canaryStuck, canaryCut} {
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) error {
			st, rec, err := h.liveState(ctx, id)
			if err != nil {
				return err
			}
			timers := st.Timers()
			if len(timers) == 0 {
				return fmt.Errorf("canary %s is %s with no timer", id, st.Status)
			}
			return h.timerPending(ctx, id, timers[0], rec, 0)
		}); err != nil {
			return fmt.Errorf("canary %s never came to rest with its timer scheduled: %w", id, err)
		}
	}
	st, rec, err := h.liveState(ctx, canaryCut)
	if err != nil {
		return err
	}
	for _, t := range st.Timers() {
		if err := ts.Purge(ctx, jetstream.WithPurgeSubject(scheduleOf(h, canaryCut, t, rec))); err != nil {
			return fmt.Errorf("purge the schedule of canary %s: %w", canaryCut, err)
		}
	}
	return nil
}

// liveState reads a run's record from the bucket's leader (a replica
// may lag).
func (h *harness) liveState(ctx context.Context, runID string) (*run.State, *runrecord.Record, error) {
	data, _, err := h.f.Runs.Get(ctx, runID, kvstore.FromLeader())
	if err != nil {
		return nil, nil, fmt.Errorf("record of %s: %w", runID, err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	st, err := step.DecodeState(rec)
	return st, rec, err
}

// checkStranded checks every record of the run bucket: a run that is
// not settled must not be stranded. A violation is looked at again for
// a few seconds (a schedule being published, a fire being copied) before
// it counts. It returns how many unsettled runs it checked and the
// violations by run; canaryCut must be one of them.
func (h *harness) checkStranded(ctx context.Context) (checked int, stranded map[string]string, err error) {
	kv, err := h.f.JS.KeyValue(ctx, h.names.RunBucket())
	if err != nil {
		return 0, nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return 0, nil, err
	}
	var unsettled []string
	for key := range keys.Keys() {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			// Listed, then gone: only a tombstone expires, and a run
			// that is not settled is never removed.
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("record of %s: %w", key, err)
		}
		rec, err := runrecord.Decode(e.Value())
		if errors.Is(err, runrecord.ErrRemoved) {
			continue // a tombstone: the run settled and was removed
		}
		if err != nil {
			return 0, nil, fmt.Errorf("record of %s: %w", key, err)
		}
		if rec.Status != nil && run.Status(rec.Status.Status).Terminal() {
			continue
		}
		unsettled = append(unsettled, key)
	}
	stranded = map[string]string{}
	for _, id := range unsettled {
		// The last error not caused by the end of the wait says why.
		var last error
		err := waitFor(ctx, 10*time.Second, func(ctx context.Context) error {
			st, rec, err := h.liveState(ctx, id)
			if err == nil && !st.Status.Terminal() {
				err = h.wayForward(ctx, id, st, rec)
			}
			if err != nil && ctx.Err() == nil {
				last = err
			}
			return err
		})
		checked++
		if err != nil {
			if last == nil {
				last = err
			}
			stranded[id] = last.Error()
		}
	}
	return checked, stranded, nil
}

// wayForward says why an unsettled run has no way forward, or nil.
func (h *harness) wayForward(ctx context.Context, runID string, st *run.State, rec *runrecord.Record) error {
	if err := st.Stranded(); err != nil {
		return err
	}
	cons, err := h.consumerInfo(ctx, h.inputConsumer(ctx, runID))
	if err != nil {
		return err
	}
	for _, t := range st.Timers() {
		if err := h.timerPending(ctx, runID, t, rec, cons.AckFloor.Stream); err != nil {
			return fmt.Errorf("%s %s: %w", st.Status, stateOf(st), err)
		}
	}
	return nil
}

// stateOf names a state's active states.
func stateOf(st *run.State) string { return fmt.Sprint(st.Control.Active) }

// timerPending says why the timer t of a run is neither scheduled nor
// fired and waiting, or nil. Scheduled: the last message on its schedule
// subject in the timer stream (the instance the record armed last,
// scheduleOf) is a schedule (Nats-Schedule) for t's deadline. Fired and
// waiting: the run's last fire, in the input stream above the
// dispatchers' ack floor or still in the timer stream, is t's and the
// record has not taken it. The ids the reducer gives ("d", "r1", "t1")
// are plain subject tokens, so they are the subject's timer token.
func (h *harness) timerPending(ctx context.Context, runID string, t run.ArmTimer, rec *runrecord.Record, ackFloor uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ts, err := h.f.JS.Stream(ctx, h.names.TimerStream())
	if err != nil {
		return err
	}
	seen := "none"
	m, err := ts.GetLastMsgForSubject(ctx, scheduleOf(h, runID, t, rec))
	switch {
	case err == nil && m.Header.Get("Nats-Schedule") != "":
		if fireDeadline(m.Header.Get(wire.HeaderDeadline)) == t.Deadline {
			return nil
		}
		seen = fmt.Sprintf("a schedule for deadline %s", m.Header.Get(wire.HeaderDeadline))
	case err == nil:
		seen = "a message that is no schedule (a disarm marker?)"
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("read the schedule of timer %s: %w", t.ID, err)
	}
	taken := func(seq uint64) bool {
		return slices.Contains(rec.Applied, seq) || slices.ContainsFunc(rec.Rejected, func(r runrecord.Rejection) bool { return r.Seq == seq })
	}
	in, err := h.f.JS.Stream(ctx, h.names.InputStream())
	if err != nil {
		return err
	}
	timer := h.names.StoredInput(h.names.Timer(runID), provision.Partitions(in.CachedInfo().Config))
	if f, err := in.GetLastMsgForSubject(ctx, timer); err == nil && isFire(f, t) && f.Sequence > ackFloor && !taken(f.Sequence) {
		return nil
	}
	if f, err := ts.GetLastMsgForSubject(ctx, h.names.Fired(runID)); err == nil && isFire(f, t) {
		if c, err := in.GetLastMsgForSubject(ctx, timer); err != nil || !isFire(c, t) {
			return nil // fired, not copied to the input stream yet
		}
	}
	return fmt.Errorf("timer %s due at %s %s (its subject holds %s) and no fire waiting",
		t.ID, time.UnixMilli(int64(t.Deadline)).UTC().Format(time.RFC3339Nano), noSchedule, seen)
}

// scheduleOf is the subject of the schedule of the timer t that the
// record says is pending: the instance it armed last, or the subject of
// the layout before instances.
func scheduleOf(h *harness, runID string, t run.ArmTimer, rec *runrecord.Record) string {
	if seq, ok := rec.Armed[t.ID]; ok {
		return h.names.ScheduleInstance(runID, t.ID, strconv.FormatInt(seq, 10))
	}
	return h.names.Schedule(runID, t.ID)
}

// noSchedule is what timerPending says of a timer that is not scheduled.
const noSchedule = "has no pending schedule"

// isFire reports whether a timer message is a fire of t.
func isFire(m *jetstream.RawStreamMsg, t run.ArmTimer) bool {
	var body wire.Timer
	if len(m.Data) > 0 && json.Unmarshal(m.Data, &body) == nil && body.Timer != "" {
		return body.Timer == t.ID && body.Deadline == t.Deadline
	}
	return m.Header.Get(wire.HeaderTimer) == t.ID && fireDeadline(m.Header.Get(wire.HeaderDeadline)) == t.Deadline
}

func fireDeadline(h string) float64 {
	d, _ := strconv.ParseFloat(h, 64)
	return d
}

// checkEnd starts the canaries, then checks every unsettled record of
// the run bucket for a way forward: each one stranded is a problem, but
// for canaryCut, which must be found stranded.
func (h *harness) checkEnd(ctx context.Context, res *results) {
	if err := h.startCanaries(ctx); err != nil {
		res.problem("canaries: %v", err)
	}
	checked, stranded, err := h.checkStranded(ctx)
	if err != nil {
		res.problem("stranding check: %v", err)
		return
	}
	res.endChecked = checked
	for _, id := range slices.Sorted(maps.Keys(stranded)) {
		if id == canaryCut {
			continue
		}
		res.stranded[id] = true
		res.problem("run %s: stranded at the end: %s", id, stranded[id])
	}
	// Found for the right reason, not for a read that failed.
	why := stranded[canaryCut]
	res.controlFound = strings.Contains(why, noSchedule)
	if !res.controlFound {
		res.problem("the stranding check did not find %s stranded for want of its schedule, which the harness purged (it said %q): it would miss a stranded run", canaryCut, why)
	}
	h.logf("stranding check: %d unsettled records; the control %s: %s", checked, canaryCut, why)
}
