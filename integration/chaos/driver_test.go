package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// runLog is what the driver saw of one run.
type runLog struct {
	id string
	i  int
	wf *workflow

	// When the harness asked for the start, saw an event run wait and
	// saw the run settle (zero if it never did).
	started, waiting, settled time.Time
	status                    *wire.Status
	// failure says why the driver gave up on the run.
	failure error
	// paused: an operator's pause held the run's events, and its resume
	// released them (every pausedEvery-th event run).
	paused bool
	// startEvent: the start carried the refused event (signal with
	// start, every startEventEvery-th event run).
	startEvent bool
	// redrives counts the redrives the driver saw taken; redrove is the
	// time of the failure the last one took the run out of.
	redrives int
	redrove  float64
	// redriveLost: the redrive was stored after retention removed the
	// failed run, which stays failed.
	redriveLost bool
	// resets counts the resets the driver saw taken; resetFrom is the
	// time of the settlement the first one took the run back from.
	resets    int
	resetFrom float64
	// removedUnseen: retention removed the run before the driver saw it
	// settle (the check reads its end from the archive).
	removedUnseen bool
	// scheduled names the chaos schedule whose fire started the run
	// (schedules_test.go); the driver only waits for it to settle.
	scheduled string

	// The server's times, filled in by the check: when the stream stored
	// the start and the accepted event, and when the run bucket stored
	// the settled record.
	stored, eventStored, ended time.Time
	// misbehaved counts the attempts the protocol worker misbehaved on,
	// filled in by the check.
	misbehaved int
}

// segments are the stretches of the run the system alone was responsible
// for, by the server's clock where it has one: from the stored start to
// the stored end, or, for an event run, from the stored start until the
// driver saw it wait and from the stored event to the end. Time the
// driver spent retrying its own calls is not in them.
func (r *runLog) segments() []time.Duration {
	if r.ended.IsZero() || r.stored.IsZero() {
		return nil
	}
	if r.wf.events {
		if r.eventStored.IsZero() {
			return nil
		}
		return []time.Duration{max(r.waiting.Sub(r.stored), 0), r.ended.Sub(r.eventStored)}
	}
	return []time.Duration{r.ended.Sub(r.stored)}
}

// driver starts runs at a steady rate, feeds event runs their events and
// waits for every run to settle.
type driver struct {
	client *client.Client
	store  *kvstore.RunStore
	log    *slog.Logger
	rng    *rand.Rand // used by generate only

	mu   sync.Mutex
	runs []*runLog
	wg   sync.WaitGroup
	// retries counts client calls that failed and were tried again.
	retries atomic.Int64
	// pauses counts the runs paused and resumed, resets the resets
	// taken.
	pauses, resets atomic.Int64
	// resetsLost and redrivesLost count the resets and redrives a
	// removal won over.
	resetsLost, redrivesLost atomic.Int64
}

// pausedEvery is how often an event run is paused before its events and
// resumed after them: the held events must end it as if it never was.
const pausedEvery = 2

// generate starts runs at rate per second until load ends; each run is
// driven until it settles or until ctx ends.
func (d *driver) generate(load, ctx context.Context, rate float64) {
	every := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		r := &runLog{i: i, wf: pick(d.rng.IntN(totalWeight()))}
		r.id = fmt.Sprintf("%s-%05d", r.wf.name, i)
		d.mu.Lock()
		d.runs = append(d.runs, r)
		d.mu.Unlock()
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := d.drive(ctx, r); err != nil {
				r.failure = err
			}
		}()
		select {
		case <-load.Done():
			return
		case <-tick.C:
		}
	}
}

// all returns every run started so far.
func (d *driver) all() []*runLog {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*runLog(nil), d.runs...)
}

// startEventEvery: every startEventEvery-th event run's start carries
// its refused event.
const startEventEvery = 3

// refusedPay is the event every event run is sent and must ignore.
var refusedPay = map[string]any{"ok": false, "amount": -1}

func (d *driver) drive(ctx context.Context, r *runLog) error {
	r.started = time.Now()
	r.startEvent = r.wf.events && r.i%startEventEvery == 1
	if err := d.retry(ctx, "start", func(ctx context.Context) error {
		if r.scheduled != "" {
			return nil // a schedule's fire started it
		}
		if r.startEvent {
			_, err := d.client.StartWithEvent(ctx, r.wf.name, r.id, r.wf.input(r.i), "pay", refusedPay, "refused")
			return err
		}
		return d.client.StartRun(ctx, r.wf.name, r.id, r.wf.input(r.i))
	}); err != nil {
		return err
	}
	if r.wf.events {
		if err := d.untilWaiting(ctx, r.id); err != nil {
			return err
		}
		r.waiting = time.Now()
		if r.i%pausedEvery == 0 {
			r.paused = true
			d.pauses.Add(1)
			if err := d.pauseRun(ctx, r.id); err != nil {
				return err
			}
		}
		// The refusal first: whichever order the dispatchers apply the two
		// in, the run ends the same.
		if err := d.retry(ctx, "event", func(ctx context.Context) error {
			if r.startEvent {
				return nil // the start carried it
			}
			return d.client.SendEvent(ctx, r.id, "pay", refusedPay, client.EventID("refused"))
		}); err != nil {
			return err
		}
		if err := d.retry(ctx, "event", func(ctx context.Context) error {
			return d.client.SendEvent(ctx, r.id, "pay", map[string]any{"ok": true, "amount": payAmount(r.i)}, client.EventID("accepted"))
		}); err != nil {
			return err
		}
		if r.paused {
			if err := d.resumeRun(ctx, r.id); err != nil {
				return err
			}
		}
	}
	for {
		// Bounded: a run removed before the driver saw it settle is
		// never settled to Wait, and a run paused again behind its
		// resume must be noticed.
		wctx, cancel := context.WithTimeout(ctx, boundedWait)
		st, err := d.client.Wait(wctx, r.id)
		cancel()
		if err == nil && r.wf.redrive && r.redrives == 0 && st.Status == wire.StatusFailed {
			if err := d.redrive(ctx, r); err != nil {
				return err
			}
			r.redrove = st.Time
			continue
		}
		if err == nil && (r.redrives > 0 && st.Status == wire.StatusFailed && st.Time <= r.redrove || r.resets > 0 && st.Time <= r.resetFrom) {
			// The settlement a redrive or reset undid, read from a
			// replica that has not caught up: wait for the next one.
			if err := pause(ctx, 200*time.Millisecond); err != nil {
				return fmt.Errorf("not settled: %w", err)
			}
			continue
		}
		if err == nil && r.wf.reset && r.i%resetEvery == 0 && r.resets == 0 && st.Status == wire.StatusDone {
			removed, err := d.reset(ctx, r)
			if err != nil {
				return err
			}
			if !removed {
				r.resetFrom = st.Time
				continue
			}
		}
		if err == nil {
			r.settled, r.status = time.Now(), st
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("not settled: %w", err)
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cur, serr := d.client.Status(sctx, r.id)
		cancel()
		if errors.Is(serr, runrecord.ErrRemoved) {
			// Retention removed it before the driver saw it settle: the
			// check reads its end from the archive.
			r.removedUnseen = true
			d.log.Info("run removed before the driver saw it settle", "run_id", r.id, "error", serr)
			return nil
		}
		if r.paused && serr == nil && cur.Status == wire.StatusPaused {
			// A pause retried after its answer was lost may be applied
			// after the resume, when a dispatcher reorders: resume again.
			if err := d.resumeRun(ctx, r.id); err != nil {
				return err
			}
		}
		d.retries.Add(1)
		d.log.Info("wait failed", "run_id", r.id, "error", err)
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("not settled: %w", err)
		}
	}
}

// boundedWait bounds each wait for a run.
const boundedWait = 30 * time.Second

// resetEvery is how often a run of a reset workflow is reset once done.
const resetEvery = 2

// reset takes a done run back to its state after its start and waits
// until a dispatcher took the reset; removed says retention removed the
// run first. A call is retried only while the run's state shows no reset
// (a retried publish is another reset, which ends the same).
func (d *driver) reset(ctx context.Context, r *runLog) (removed bool, err error) {
	var seq uint64
	err = d.retry(ctx, "reset", func(ctx context.Context) error {
		data, _, err := d.store.Get(ctx, r.id, kvstore.FromLeader())
		if err != nil {
			return err
		}
		rec, err := runrecord.Decode(data)
		if errors.Is(err, runrecord.ErrRemoved) {
			removed = true
			return nil
		}
		if err != nil {
			return err
		}
		st, err := step.DecodeState(rec)
		if err != nil {
			return err
		}
		if st.Resets > 0 || len(rec.Applied) == 0 {
			return nil
		}
		// Applied lists the inputs the run took in order: the first is its
		// start, after which the run was in its first state.
		seq, err = d.client.Reset(ctx, r.id, rec.Applied[0], "chaos", "harness")
		return err
	})
	if err == nil && !removed && seq != 0 {
		err = d.retry(ctx, "resetted", func(ctx context.Context) error {
			_, err := d.client.Resetted(ctx, r.id, seq)
			if errors.Is(err, runrecord.ErrRemoved) {
				// The removal of the settlement it went back from was
				// applied first (retention_test.go): the run stays removed.
				removed = true
				return nil
			}
			return err
		})
	}
	switch {
	case err != nil:
		return false, err
	case removed:
		d.resetsLost.Add(1)
		d.log.Info("reset lost to the run's removal", "run_id", r.id)
	default:
		d.resets.Add(1)
		r.resets++
	}
	return removed, nil
}

// pauseRun pauses a run and waits until it is paused. A call is retried
// only while the run is not seen paused: each retry is another pause.
func (d *driver) pauseRun(ctx context.Context, runID string) error {
	if err := d.retry(ctx, "pause", func(ctx context.Context) error {
		if st, err := d.client.Status(ctx, runID); err == nil && st.Status == wire.StatusPaused {
			return nil
		}
		return d.client.Pause(ctx, runID, "chaos", "harness")
	}); err != nil {
		return err
	}
	return d.untilStatus(ctx, runID, wire.StatusPaused)
}

// resumeRun resumes a paused run, retrying only while it is seen paused.
func (d *driver) resumeRun(ctx context.Context, runID string) error {
	return d.retry(ctx, "resume", func(ctx context.Context) error {
		if st, err := d.client.Status(ctx, runID); err == nil && st.Status != wire.StatusPaused {
			return nil
		}
		return d.client.Resume(ctx, runID, "chaos", "harness")
	})
}

// redrive redrives a failed run and waits until a dispatcher took it. A
// redrive published twice (its acknowledgement lost) is refused the
// second time, which is as good. One stored after retention removed the
// run (the removal came first: the driver saw the failure late, behind
// faults) is refused as a removed run's and counted apart: the run stays
// removed, failed, as its archive says.
func (d *driver) redrive(ctx context.Context, r *runLog) error {
	var seq uint64
	if err := d.retry(ctx, "redrive", func(ctx context.Context) (err error) {
		seq, err = d.client.Redrive(ctx, r.id, "chaos")
		return err
	}); err != nil {
		return err
	}
	return d.retry(ctx, "redriven", func(ctx context.Context) error {
		_, err := d.client.Redriven(ctx, r.id, seq)
		switch {
		case errors.Is(err, runrecord.ErrRemoved):
			d.redrivesLost.Add(1)
			r.redriveLost = true
			d.log.Info("redrive lost to the run's removal", "run_id", r.id)
			return nil
		case err == nil || errors.Is(err, client.ErrRedriveRefused):
			r.redrives++
			return nil
		}
		return err
	})
}

// untilWaiting polls the run's record until it waits.
func (d *driver) untilWaiting(ctx context.Context, runID string) error {
	return d.untilStatus(ctx, runID, wire.StatusWaiting)
}

// untilStatus polls the run's record until it has status want.
func (d *driver) untilStatus(ctx context.Context, runID, want string) error {
	var last error
	for {
		// Bounded: a request lost to a reconnect is never answered.
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := d.client.Status(sctx, runID)
		cancel()
		switch {
		case err == nil && st.Status == want:
			return nil
		case err == nil:
			last = fmt.Errorf("status %s", st.Status)
		case !errors.Is(err, client.ErrRunNotFound):
			d.retries.Add(1)
			last = err
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			if last == nil {
				return fmt.Errorf("never seen %s: %w", want, err)
			}
			return fmt.Errorf("never seen %s (%w): %w", want, last, err)
		}
	}
}

// retry calls f until it succeeds or ctx ends, each call bounded. Starts
// and events carry a message id, so a call whose answer was lost and that
// is tried again stores nothing twice.
func (d *driver) retry(ctx context.Context, what string, f func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		d.retries.Add(1)
		d.log.Info(what+" failed", "error", err)
		if err := pause(ctx, backoff); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		backoff = min(2*backoff, time.Second)
	}
}
