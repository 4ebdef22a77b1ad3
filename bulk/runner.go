package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/lifecycle"
	"github.com/jetflow/jetflow/wire"
)

// Runner takes runnable jobs from the job bucket and carries them out, one
// at a time. Start it with Start and end it with Stop.
type Runner struct {
	js   jetstream.JetStream
	cfg  Config
	c    *client.Client
	log  *slog.Logger
	wake chan struct{}
	run  lifecycle.Loop
}

// New returns a runner over js; c publishes the operations and reads runs
// and jobs.
func New(js jetstream.JetStream, c *client.Client, cfg Config) *Runner {
	cfg = cfg.WithDefaults()
	if cfg.Holder == "" {
		cfg.Holder = client.NewJobID()
	}
	return &Runner{js: js, cfg: cfg, c: c, log: cfg.Logger, wake: make(chan struct{}, 1)}
}

// Start runs the runner in the background until Stop. It never fails: a
// deployment without a job bucket (provisioned before bulk jobs) is
// looked at again every Poll.
func (r *Runner) Start() {
	if r.cfg.Off {
		return
	}
	r.run.Start(r.loop)
}

// Stop ends the runner and waits for it: a job in hand is checkpointed
// and its lease given up, so another dispatcher takes it at once.
func (r *Runner) Stop() { r.run.Stop(nil) }

func (r *Runner) loop(ctx context.Context) {
	var watching sync.WaitGroup
	defer watching.Wait()
	timer := r.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	bound, warned := false, false
	// An idle deployment's job bucket is read only when the watch says it
	// changed, and once every idleRescan polls in case a change was missed;
	// while some job is unsettled, every poll reads it (a lease may lapse).
	unsettled, idle := true, 0
	for {
		polled := false
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			polled = true
		case <-r.wake:
		}
		if polled && bound && !unsettled && idle < idleRescan {
			idle++
			timer.Reset(r.cfg.Poll)
			continue
		}
		idle = 0
		if !bound {
			b, err := r.c.JobBucket(ctx)
			if err != nil {
				if !warned && ctx.Err() == nil {
					r.log.Info("bulk: no job bucket yet; bulk jobs wait until it is provisioned", slog.Any("error", err))
					warned = true
				}
				timer.Reset(r.cfg.Poll)
				continue
			}
			bound = true
			watching.Go(func() { r.watch(ctx, b) })
		}
		unsettled = r.runnable(ctx)
		timer.Reset(r.cfg.Poll)
	}
}

// watch wakes the loop at every change of the job bucket: a new job, a
// cancelled one, a lease given up.
func (r *Runner) watch(ctx context.Context, b *kvstore.Bucket) {
	w, err := b.KV().WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		r.log.Warn("bulk: cannot watch the job bucket; polling only", slog.Any("error", err))
		return
	}
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
			select {
			case r.wake <- struct{}{}:
			default:
			}
		case <-ctx.Done():
			_ = w.Stop()
			for range w.Updates() { //nolint:revive // draining until the watcher closes
			}
			return
		}
	}
}

// idleRescan is how many polls an idle runner skips between two reads
// of the job bucket.
const idleRescan = 12

// runnable takes and works every job it can, oldest first. It reports
// whether a job may still need it: one another holder leases, or one it
// worked on (which may have stopped short).
func (r *Runner) runnable(ctx context.Context) (unsettled bool) {
	jobs, err := r.c.Jobs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("bulk: list jobs", slog.Any("error", err))
		}
		return true
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			return true
		}
		if j.Settled() {
			r.expire(ctx, j)
			continue
		}
		unsettled = true
		if !r.free(j) {
			continue
		}
		taken, rev, err := r.take(ctx, j.ID)
		if err != nil {
			if !errors.Is(err, errNotFree) && ctx.Err() == nil {
				r.log.Warn("bulk: take job", slog.String("job_id", j.ID), slog.Any("error", err))
			}
			continue
		}
		r.work(ctx, taken, rev)
	}
	return unsettled
}

var errNotFree = errors.New("job not free")

// free: the job is unsettled, this runner can carry it out, and nobody
// else holds a live lease on it.
func (r *Runner) free(j *wire.Job) bool {
	if j.Settled() || j.Operation == client.OpRetentionSweep && r.cfg.Sweep == nil || j.Operation == client.OpMigrate && r.cfg.Migrate == nil {
		return false
	}
	if j.Holder == "" || j.Holder == r.cfg.Holder {
		return true
	}
	until, err := time.Parse(time.RFC3339Nano, j.LeaseUntil)
	return err != nil || !r.cfg.Clock.Now().Before(until)
}

// take claims the job by compare-and-swap on its record.
func (r *Runner) take(ctx context.Context, id string) (*wire.Job, uint64, error) {
	return r.c.UpdateJob(ctx, id, func(j *wire.Job) error {
		if !r.free(j) {
			return errNotFree
		}
		if j.Holder != "" && j.Holder != r.cfg.Holder {
			j.Takeovers++
		}
		j.State, j.Holder = wire.JobRunning, r.cfg.Holder
		r.stamp(j)
		return nil
	})
}

func (r *Runner) stamp(j *wire.Job) {
	now := r.cfg.Clock.Now()
	j.Updated, j.LeaseUntil = client.Timestamp(now), client.Timestamp(now.Add(r.cfg.LeaseTTL))
}

// errLost ends a job's work here: it was cancelled, or another holder
// took it.
var errLost = errors.New("job no longer ours")

// work carries out a job this runner holds at revision rev.
func (r *Runner) work(ctx context.Context, j *wire.Job, rev uint64) {
	log := r.log.With(slog.String("job_id", j.ID), slog.String("operation", j.Operation))
	log.Info("bulk: job taken", slog.String("cursor", j.Cursor), slog.Int("takeovers", j.Takeovers))
	op, ok := client.Operations[j.Operation]
	if ok && j.Operation == client.OpRetentionSweep {
		op.Publish = r.sweeper()
	}
	timeout := r.cfg.OpTimeout
	if ok && j.Operation == client.OpMigrate {
		if j.Revision == "" {
			r.finish(ctx, j, rev, wire.JobFailed, "a migration names no revision to move runs to", log)
			return
		}
		op.Publish = r.migrator(j.Revision)
		// A migration reads and replays the run's history first.
		timeout = migrateTimeout
	}
	if !ok {
		r.finish(ctx, j, rev, wire.JobFailed, fmt.Sprintf("unknown operation %q (one of %s)", j.Operation, strings.Join(client.OperationNames(), ", ")), log)
		return
	}
	m, err := client.CompileFilter(j.Filter)
	if err != nil {
		r.finish(ctx, j, rev, wire.JobFailed, err.Error(), log)
		return
	}
	if err := m.Bind(ctx, r.js, r.cfg.Names); err != nil {
		log.Warn("bulk: job paused; retried after its lease", slog.Any("error", err))
		return
	}
	runs, _, err := r.c.Matching(ctx, m)
	if err != nil {
		if errors.Is(err, client.ErrMatch) || errors.Is(err, client.ErrNoSearch) {
			r.finish(ctx, j, rev, wire.JobFailed, err.Error(), log)
			return
		}
		log.Warn("bulk: job paused; retried after its lease", slog.Any("error", err))
		return
	}
	j.Matched = len(runs)
	// Resume after the cursor: runs are in run id order.
	todo := runs[len(runs):]
	if i := slices.IndexFunc(runs, func(l client.Listed) bool { return l.Status.Run > j.Cursor }); i >= 0 {
		todo = runs[i:]
	}
	reason := "bulk job " + j.ID
	if j.Reason != "" {
		reason += ": " + j.Reason
	}
	for first := true; len(todo) > 0; first = false {
		if !first {
			if err := r.stillOurs(ctx, j.ID); err != nil {
				log.Info("bulk: job left", slog.String("reason", err.Error()))
				return
			}
		}
		n := min(r.cfg.Batch, len(todo))
		batch := todo[:n]
		todo = todo[n:]
		sent, skipped, failed, lastErr := r.apply(ctx, op, batch, reason, "bulk-"+j.ID, timeout)
		if ctx.Err() != nil && sent+skipped+failed < len(batch) {
			// Stopping mid-batch: the batch is redone by the next holder.
			r.release(ctx, j, rev, log)
			return
		}
		j.Sent, j.Skipped, j.Errors = j.Sent+sent, j.Skipped+skipped, j.Errors+failed
		if lastErr != nil {
			j.Error = lastErr.Error()
		}
		j.Cursor = batch[len(batch)-1].Status.Run
		if rev, err = r.checkpoint(ctx, j, rev, nil); err != nil {
			if errors.Is(err, errLost) {
				log.Info("bulk: job left", slog.String("reason", err.Error()))
			} else {
				log.Warn("bulk: checkpoint failed; job retried after its lease", slog.Any("error", err))
			}
			return
		}
		if ctx.Err() != nil {
			r.release(ctx, j, rev, log)
			return
		}
	}
	r.finish(ctx, j, rev, wire.JobDone, j.Error, log)
}

// apply publishes op for every eligible run of batch, Parallel at once.
func (r *Runner) apply(ctx context.Context, op client.Operation, batch []client.Listed, reason, key string, timeout time.Duration) (sent, skipped, failed int, lastErr error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.cfg.Parallel)
	for _, l := range batch {
		if !op.Eligible(l.Status.Status) {
			skipped++
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := r.publish(ctx, op, l.Status.Run, reason, key, timeout)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				sent++
			case ctx.Err() == nil:
				failed++
				lastErr = err
			}
		})
	}
	wg.Wait()
	return sent, skipped, failed, lastErr
}

// publish sends one run's operation, retrying transient failures a few
// times on the runner's clock.
func (r *Runner) publish(ctx context.Context, op client.Operation, runID, reason, key string, timeout time.Duration) error {
	b := backoff.WithContext(backoff.WithMaxRetries(backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond)), 3), ctx)
	return backoff.RetryNotifyWithTimer(func() error {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return op.Publish(pctx, r.c, runID, reason, key)
	}, b, nil, &clock.RetryTimer{Clock: r.cfg.Clock})
}

// checkpoint saves j's progress at rev and renews the lease; settle,
// when set, changes the record last (to end the job or give it up). A
// record changed by someone else is read again: cancelled or taken, the
// job is no longer ours (errLost); otherwise the progress is saved over
// it. It goes on after ctx ends (a stopping runner saves what it did).
func (r *Runner) checkpoint(ctx context.Context, j *wire.Job, rev uint64, settle func(*wire.Job)) (uint64, error) {
	ctx = context.WithoutCancel(ctx)
	b, err := r.c.JobBucket(ctx)
	if err != nil {
		return 0, err
	}
	if r.cfg.CheckpointHook != nil {
		r.cfg.CheckpointHook(j)
	}
	for range 5 {
		r.stamp(j)
		if settle != nil {
			settle(j)
		}
		data, err := json.Marshal(j)
		if err != nil {
			return 0, err
		}
		cctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		next, err := b.KV().Update(cctx, j.ID, data, rev)
		cancel()
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, err
		}
		cctx, cancel = context.WithTimeout(ctx, r.cfg.OpTimeout)
		cur, curRev, err := r.c.Job(cctx, j.ID, true)
		cancel()
		if err != nil {
			return 0, err
		}
		if cur.Settled() {
			if cur.State == wire.JobCancelled && cur.Cursor < j.Cursor {
				// Cancelled while we worked: record how far we got.
				cur.Cursor, cur.Sent, cur.Skipped, cur.Errors, cur.Matched = j.Cursor, j.Sent, j.Skipped, j.Errors, j.Matched
				if data, err := json.Marshal(cur); err == nil {
					cctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
					_, _ = b.KV().Update(cctx, j.ID, data, curRev)
					cancel()
				}
			}
			return 0, fmt.Errorf("%w: it is %s", errLost, cur.State)
		}
		if cur.Holder != r.cfg.Holder {
			return 0, fmt.Errorf("%w: %s holds it", errLost, cur.Holder)
		}
		rev = curRev
	}
	return 0, errors.New("bulk: checkpoint: the job's record keeps changing")
}

// stillOurs reads the job's record (through the leader) and refuses to
// go on when it was cancelled or taken by another holder.
func (r *Runner) stillOurs(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	cur, _, err := r.c.Job(cctx, id, true)
	switch {
	case err != nil:
		return err
	case cur.Settled():
		return fmt.Errorf("%w: it is %s", errLost, cur.State)
	case cur.Holder != r.cfg.Holder:
		return fmt.Errorf("%w: %s holds it", errLost, cur.Holder)
	}
	return nil
}

// finish settles the job (done or failed) at its last checkpoint.
func (r *Runner) finish(ctx context.Context, j *wire.Job, rev uint64, state, msg string, log *slog.Logger) {
	_, err := r.checkpoint(ctx, j, rev, func(j *wire.Job) {
		j.State, j.Error = state, msg
		j.Finished, j.Holder, j.LeaseUntil = j.Updated, "", ""
	})
	if err != nil {
		log.Info("bulk: job not settled here", slog.Any("error", err))
		return
	}
	log.Info("bulk: job "+state, slog.Int("matched", j.Matched), slog.Int("sent", j.Sent),
		slog.Int("skipped", j.Skipped), slog.Int("errors", j.Errors), slog.String("error", msg))
}

// release saves the progress of a job this process stops holding while
// it is unfinished and gives up the lease, so that another dispatcher
// takes it at once.
func (r *Runner) release(ctx context.Context, j *wire.Job, rev uint64, log *slog.Logger) {
	if _, err := r.checkpoint(ctx, j, rev, func(j *wire.Job) { j.Holder, j.LeaseUntil = "", "" }); err != nil {
		log.Info("bulk: job not released; its lease lapses", slog.Any("error", err))
		return
	}
	log.Info("bulk: job released", slog.String("cursor", j.Cursor))
}

// jobMarkerTTL is how long the purge marker a removed job leaves stays,
// where the job bucket takes per-key TTLs: long enough for every watcher
// and runner to see the job go.
const jobMarkerTTL = time.Hour

// expire removes a settled job's record once JobRetention has passed
// since it finished (or, for a record with no finish time, since its last
// update). The purge is a compare-and-swap on the revision read through
// the leader, so a record changed meanwhile (the cursor a cancelled job's
// last holder saves) is left for the next pass, and of several runners
// one removes it.
func (r *Runner) expire(ctx context.Context, j *wire.Job) {
	if r.cfg.JobRetention < 0 {
		return
	}
	at := j.Finished
	if at == "" {
		at = j.Updated
	}
	fin, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || r.cfg.Clock.Now().Before(fin.Add(r.cfg.JobRetention)) {
		return
	}
	log := r.log.With(slog.String("job_id", j.ID))
	cctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	b, err := r.c.JobBucket(cctx)
	if err != nil {
		return
	}
	cur, rev, err := r.c.Job(cctx, j.ID, true)
	if err != nil || !cur.Settled() || cur.Finished != j.Finished || cur.Updated != j.Updated {
		return
	}
	opts := []jetstream.KVDeleteOpt{jetstream.LastRevision(rev)}
	if st, err := b.KV().Status(cctx); err == nil && st.LimitMarkerTTL() > 0 {
		// Else a job bucket provisioned before per-key TTLs: its marker stays.
		opts = append(opts, jetstream.PurgeTTL(jobMarkerTTL))
	}
	if err := b.KV().Purge(cctx, j.ID, opts...); err != nil {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrKeyExists) {
			log.Warn("bulk: settled job not removed; tried again at the next pass", slog.Any("error", err))
		}
		return
	}
	log.Info("bulk: settled job removed", slog.String("state", cur.State), slog.String("finished", at),
		slog.Duration("job_retention", r.cfg.JobRetention))
}

// sweeper is the retention sweep's per-run step: cfg.Sweep, at most
// SweepRate runs a second on the runner's clock.
func (r *Runner) sweeper() func(ctx context.Context, _ *client.Client, runID, _, _ string) error {
	every := time.Duration(float64(time.Second) / r.cfg.SweepRate)
	var mu sync.Mutex
	next := r.cfg.Clock.Now()
	return func(ctx context.Context, _ *client.Client, runID, _, _ string) error {
		mu.Lock()
		now := r.cfg.Clock.Now()
		wait := next.Sub(now)
		next = later(next, now).Add(every)
		mu.Unlock()
		if wait > 0 {
			t := r.cfg.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C():
			}
		}
		return r.cfg.Sweep(ctx, runID)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// migrateTimeout bounds one run's migration: reading its record and
// history, replaying it twice, publishing.
const migrateTimeout = 2 * time.Minute

// migrator is a migration's per-run step: cfg.Migrate checks the run
// and the runner publishes what it returns, with a Nats-Msg-Id made of
// the job and the run so that a new holder re-sending it within the
// input stream's duplicate window stores it once; a run that took the
// first already is on the revision, and is left alone.
func (r *Runner) migrator(to string) func(ctx context.Context, c *client.Client, runID, reason, key string) error {
	return func(ctx context.Context, c *client.Client, runID, reason, key string) error {
		m, err := r.cfg.Migrate(ctx, runID, to)
		if err != nil || m == nil {
			return err
		}
		m.Reason, m.Operator = reason, bulkOperator
		_, err = c.Migrate(ctx, runID, *m, key)
		return err
	}
}

// bulkOperator is the operator a bulk job's inputs name.
const bulkOperator = "bulk job"
