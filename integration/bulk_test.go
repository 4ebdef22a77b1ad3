package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// Bulk jobs in a dispatcher process (bulkProcessConfig): the batch size,
// the lease, and the checkpoint at which the process SIGKILLs itself.
const (
	jobBatchEnv = "JETFLOW_IT_JOB_BATCH"
	jobLeaseEnv = "JETFLOW_IT_JOB_LEASE"
	jobCrashEnv = "JETFLOW_IT_JOB_CRASH"
)

// bulkProcessConfig is the bulk-job runner of a dispatcher process, read
// from the environment. With jobCrashEnv = N, the process prints
// "jobcrash N" and kills itself at its N-th checkpoint, after the batch
// was published and before it is recorded.
func bulkProcessConfig() bulk.Config {
	var c bulk.Config
	c.Batch, _ = strconv.Atoi(os.Getenv(jobBatchEnv))
	c.LeaseTTL, _ = time.ParseDuration(os.Getenv(jobLeaseEnv))
	if n, _ := strconv.Atoi(os.Getenv(jobCrashEnv)); n > 0 {
		seen := 0
		c.CheckpointHook = func(*wire.Job) {
			if seen++; seen == n {
				fmt.Printf("jobcrash %d\n", n)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	return c
}

// startWaiting starts runs of "approval" (each waits a minute for an
// event) with input {"n": i, "sku": tea for even i, else coffee} and
// waits until every one waits.
func startWaiting(t *testing.T, e *env, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s%04d", prefix, i)
		sku := "coffee"
		if i%2 == 0 {
			sku = "tea"
		}
		e.start(t, "approval", ids[i], map[string]any{"n": i, "sku": sku})
	}
	for _, id := range ids {
		e.waitStatus(t, id, wire.StatusWaiting, 60*time.Second)
	}
	return ids
}

// watchJob follows a job until it ends.
func watchJob(t *testing.T, e *env, id string, timeout time.Duration) *wire.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	j, err := e.f.Client.WatchJob(ctx, id, func(*wire.Job) bool { return true })
	if err != nil {
		t.Fatalf("job %s: %v (last %+v)", id, err, j)
	}
	return j
}

// cancelsPerRun counts the cancel inputs the input stream holds per run.
func cancelsPerRun(t *testing.T, e *env) map[string]uint64 {
	t.Helper()
	return e.inputsPerRun(t, subjects.KindCancel)
}

// inputsPerRun counts the inputs of kind the input stream holds per run.
// It reads every input subject: a partitioned stream stores an input
// under its run's partition.
func (e *env) inputsPerRun(t testing.TB, kind string) map[string]uint64 {
	t.Helper()
	s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx, jetstream.WithSubjectFilter(e.names.Prefix()+".in.>"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		runID, k, _, err := e.names.ParseInput(subj)
		if err != nil {
			t.Fatal(err)
		}
		if k == kind {
			out[runID] += n
		}
	}
	return out
}

// TestBulkCancelMatchingRuns: a job cancels exactly the runs its filter
// matches (workflow and a query over the input), once each; a matching
// run that had already ended is counted as skipped; the others are
// untouched.
func TestBulkCancelMatchingRuns(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ids := startWaiting(t, e, "b", 40)
	// Not matching: another workflow, done.
	e.start(t, "choice", "other", 3)
	e.wait(t, "other", 30*time.Second)
	// Matching but ended before the job.
	if err := e.f.Client.Cancel(e.ctx, ids[0], "by hand"); err != nil {
		t.Fatal(err)
	}
	e.wait(t, ids[0], 30*time.Second)

	match := json.RawMessage(`{"$eq":["$.input.sku","tea"]}`)
	if _, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: "cancel", Filter: wire.RunFilter{Match: json.RawMessage(`{"$eq":["$.input.sku"]}`)}}); err == nil {
		t.Fatal("a job whose query does not compile was accepted")
	}
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: "cancel", Reason: "recall", Filter: wire.RunFilter{Workflow: "approval", Match: match}})
	if err != nil {
		t.Fatal(err)
	}
	j := watchJob(t, e, job.ID, 60*time.Second)
	if j.State != wire.JobDone || j.Matched != 20 || j.Sent != 19 || j.Skipped != 1 || j.Errors != 0 {
		t.Fatalf("job ended %+v; want done, 20 matched, 19 sent, 1 skipped", j)
	}
	for i, id := range ids {
		want := wire.StatusWaiting
		if i%2 == 0 {
			want = wire.StatusCancelled
		}
		e.waitStatus(t, id, want, 30*time.Second)
		e.checkRecord(t, id, 0)
	}
	e.consumerSettled(t, 15*time.Second)
	per := cancelsPerRun(t, e)
	for i, id := range ids {
		if want := uint64(1 - i%2); per[id] != want {
			t.Errorf("run %s: %d cancel inputs stored, want %d", id, per[id], want)
		}
	}
	if st := e.waitStatus(t, "other", wire.StatusDone, time.Second); st == nil {
		t.Fatal("other changed")
	}
}

// TestBulkJobCancelledMidway: a job cancelled while it works stops at its
// next checkpoint; the runs past it are untouched.
func TestBulkJobCancelledMidway(t *testing.T) {
	t.Parallel()
	const batch, runs = 5, 30
	paused, resume := make(chan *wire.Job, 1), make(chan struct{})
	calls := 0
	e := setup(t, options{dispatcher: dispatcher.Config{Jobs: bulk.Config{Batch: batch, CheckpointHook: func(j *wire.Job) {
		if calls++; calls == 2 {
			paused <- j
			<-resume
		}
	}}}})
	ids := startWaiting(t, e, "m", runs)
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: "cancel", Filter: wire.RunFilter{Workflow: "approval", Status: wire.StatusWaiting}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-paused:
	case <-time.After(60 * time.Second):
		t.Fatal("the job never reached its second checkpoint")
	}
	if _, err := e.f.Client.CancelJob(e.ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	close(resume)
	// The holder records how far it got into the cancelled job.
	natstest.WaitFor(t, 30*time.Second, "the holder's progress in the cancelled job", func() error {
		j, _, err := e.f.Client.Job(e.ctx, job.ID, true)
		if err != nil {
			return err
		}
		if j.State != wire.JobCancelled || j.Sent != 2*batch || j.Cursor != ids[2*batch-1] {
			return fmt.Errorf("job %+v; want cancelled after two batches (%d runs, cursor %s)", j, 2*batch, ids[2*batch-1])
		}
		return nil
	})
	if _, err := e.f.Client.CancelJob(e.ctx, job.ID); err == nil {
		t.Error("a cancelled job was cancelled again")
	}
	for i, id := range ids {
		want := wire.StatusWaiting
		if i < 2*batch {
			want = wire.StatusCancelled
		}
		e.waitStatus(t, id, want, 30*time.Second)
	}
	e.consumerSettled(t, 15*time.Second)
	for i, id := range ids[2*batch:] {
		if st, err := e.f.Client.Status(e.ctx, id); err != nil || st.Status != wire.StatusWaiting {
			t.Errorf("run %d %s past the cancelled job's cursor: %+v, %v", i, id, st, err)
		}
	}
}

// TestBulkJobSurvivesDispatcherKill: the dispatcher process holding a
// bulk job is SIGKILLed after publishing a batch it had not recorded yet;
// another dispatcher takes the job once its lease lapses, resumes after
// the last checkpoint and finishes it. Every run is cancelled, and the
// batch published twice is stored once (the duplicate window).
func TestBulkJobSurvivesDispatcherKill(t *testing.T) {
	t.Parallel()
	const runs, batch = 120, 20
	e := setup(t, options{dispatchers: none})
	lease := []string{jobBatchEnv + "=" + strconv.Itoa(batch), jobLeaseEnv + "=2s"}
	victim := e.spawnDispatcher(t, "", crashAckWait, append(lease, jobCrashEnv+"=3")...)
	ids := startWaiting(t, e, "k", runs)
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: "cancel", Filter: wire.RunFilter{Workflow: "approval"}})
	if err != nil {
		t.Fatal(err)
	}
	if line := victim.next(t, 60*time.Second); line != "jobcrash 3" {
		t.Fatalf("the victim said %q, want jobcrash 3", line)
	}
	victim.waitKilled(t)
	before, _, err := e.f.Client.Job(e.ctx, job.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if before.Sent != 2*batch || before.State != wire.JobRunning {
		t.Fatalf("job at the kill: %+v; want running with two batches recorded", before)
	}
	e.spawnDispatcher(t, "", crashAckWait, lease...)
	j := watchJob(t, e, job.ID, 60*time.Second)
	if j.State != wire.JobDone || j.Takeovers != 1 || j.Matched != runs || j.Sent+j.Skipped != runs || j.Errors != 0 {
		t.Fatalf("job ended %+v; want done after one takeover, %d runs handled", j, runs)
	}
	for _, id := range ids {
		e.waitStatus(t, id, wire.StatusCancelled, 30*time.Second)
		e.checkRecord(t, id, 0)
	}
	e.consumerSettled(t, 30*time.Second)
	per := cancelsPerRun(t, e)
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("run %s: %d cancel inputs stored, want 1", id, per[id])
		}
	}
	t.Logf("killed the holder after publishing batch 3 of %d; the next holder finished: sent %d, skipped %d (runs the first holder had cancelled past its checkpoint)",
		runs/batch, j.Sent, j.Skipped)
}

// bulkThroughputCases are the operations TestBulkThroughput measures:
// the workflow whose runs it starts, the status they reach before the job
// and the one each run reaches when the job's operation is applied. The
// waiting runs wait without a timer ("forever"): on a busy machine a run
// that expired before the job reached it would be skipped.
var bulkThroughputCases = map[string]struct{ workflow, from, to string }{
	"cancel":    {"forever", wire.StatusWaiting, wire.StatusCancelled},
	"terminate": {"forever", wire.StatusWaiting, wire.StatusTerminated},
	"pause":     {"forever", wire.StatusWaiting, wire.StatusPaused},
	// Failed runs (an uncaught task failure) whose worker is then
	// stopped, so that a redriven run stays running.
	"redrive": {"uncaught", wire.StatusFailed, wire.StatusRunning},
}

// TestBulkThroughput measures one job applying an operation to many runs
// on one dispatcher: the figures are runs per second from the job's
// submission until the job is done (every input published) and until
// every run's status shows the operation applied, and how the job
// reported its progress (the updates a watcher saw, the first one with a
// run sent, the longest gap between two). Not a timed assertion: it
// checks that every run took the operation, and logs the rates.
// JETFLOW_IT_BULK_RUNS sets how many runs (default 2000),
// JETFLOW_IT_BULK_OP the operation (cancel, the default; terminate,
// pause, redrive).
func TestBulkThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("throughput measurement")
	}
	t.Parallel()
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("JETFLOW_IT_BULK_RUNS")); err == nil && v > 0 {
		n = v
	}
	op := cmp.Or(os.Getenv("JETFLOW_IT_BULK_OP"), "cancel")
	tc, ok := bulkThroughputCases[op]
	if !ok {
		t.Fatalf("JETFLOW_IT_BULK_OP=%q: want cancel, terminate, pause or redrive", op)
	}
	e := setup(t, options{workers: none, logLevel: slog.LevelWarn})
	var w *worker.Worker
	if op == "redrive" {
		w = e.addWorker()
	}
	var wg sync.WaitGroup
	const publishers = 8
	for p := range publishers {
		wg.Go(func() {
			for i := p; i < n; i += publishers {
				if err := e.f.Client.StartRun(e.ctx, tc.workflow, fmt.Sprintf("t%06d", i), i); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	count := func(status string) func() error {
		return func() error {
			page, err := e.f.Client.ListRuns(e.ctx, client.ListOptions{Filter: wire.RunFilter{Status: status}})
			if err != nil {
				return err
			}
			if len(page.Runs) != n {
				return fmt.Errorf("%d of %d runs %s", len(page.Runs), n, status)
			}
			return nil
		}
	}
	natstest.WaitFor(t, 120*time.Second, "every run "+tc.from, count(tc.from))
	if w != nil {
		stopWithin(t, "worker", w.Stop)
	}
	t0 := time.Now()
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: op, Filter: wire.RunFilter{Workflow: tc.workflow, Status: tc.from}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 120*time.Second)
	defer cancel()
	updates, last := 0, t0
	var firstSent, longest time.Duration
	j, err := e.f.Client.WatchJob(ctx, job.ID, func(j *wire.Job) bool {
		now := time.Now()
		updates++
		longest = max(longest, now.Sub(last))
		last = now
		if firstSent == 0 && j.Sent > 0 {
			firstSent = now.Sub(t0)
		}
		return true
	})
	if err != nil {
		t.Fatalf("job %s: %v (last %+v)", job.ID, err, j)
	}
	published := time.Since(t0)
	if j.State != wire.JobDone || j.Sent != n {
		t.Fatalf("job ended %+v; want done with %d sent", j, n)
	}
	natstest.WaitFor(t, 180*time.Second, "every run "+tc.to, count(tc.to))
	all := time.Since(t0)
	t.Logf("bulk %s of %d %s runs, one dispatcher: job done (every input published) in %s (%.0f runs/s); every run %s in %s (%.0f runs/s); progress: %d updates watched, first with a run sent after %s, longest gap %s",
		op, n, tc.from, published.Round(time.Millisecond), float64(n)/published.Seconds(), tc.to, all.Round(time.Millisecond), float64(n)/all.Seconds(),
		updates, firstSent.Round(time.Millisecond), longest.Round(time.Millisecond))
}

// TestBulkJobRepublishIsDeduplicated: after its holder was SIGKILLed
// between publishing a batch and recording it, the next holder (a runner
// with no dispatcher beside it, so that nothing is applied meanwhile)
// publishes that batch again: the input stream stores each run's cancel
// once, and a dispatcher started afterwards applies one cancel per run.
func TestBulkJobRepublishIsDeduplicated(t *testing.T) {
	t.Parallel()
	const runs, batch = 60, 10
	e := setup(t, options{dispatchers: none})
	victim := e.spawnDispatcher(t, "", crashAckWait, jobBatchEnv+"="+strconv.Itoa(batch), jobLeaseEnv+"=2s", jobCrashEnv+"=3")
	ids := startWaiting(t, e, "d", runs)
	job, err := e.f.Client.SubmitJob(e.ctx, client.JobSpec{Operation: "cancel", Filter: wire.RunFilter{Workflow: "approval"}})
	if err != nil {
		t.Fatal(err)
	}
	if line := victim.next(t, 60*time.Second); line != "jobcrash 3" {
		t.Fatalf("the victim said %q, want jobcrash 3", line)
	}
	victim.waitKilled(t)
	if per := cancelsPerRun(t, e); len(per) != 3*batch {
		t.Fatalf("%d runs have a cancel input after the kill, want %d", len(per), 3*batch)
	}
	r := bulk.New(e.f.JS, e.f.Client, bulk.Config{
		Names: e.names, Batch: batch, LeaseTTL: 2 * time.Second, Poll: 200 * time.Millisecond,
		Logger: e.logs.logger("runner"),
	})
	r.Start()
	t.Cleanup(r.Stop)
	j := watchJob(t, e, job.ID, 60*time.Second)
	// The next holder resumed after batch 2: it skipped the runs of batch 3
	// the victim had already cancelled and sent the others again.
	if j.State != wire.JobDone || j.Takeovers != 1 || j.Errors != 0 || j.Sent+j.Skipped != runs || j.Sent < runs-batch {
		t.Fatalf("job ended %+v; want done after one takeover, batches 4 to 6 sent", j)
	}
	per := cancelsPerRun(t, e)
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("run %s: %d cancel inputs stored, want 1", id, per[id])
		}
	}
	e.spawnDispatcher(t, "", crashAckWait)
	for _, id := range ids {
		e.waitStatus(t, id, wire.StatusCancelled, 60*time.Second)
		e.checkRecord(t, id, 0)
	}
	e.consumerSettled(t, 30*time.Second)
	t.Logf("the next holder sent %d runs of the unrecorded batch again (the victim had cancelled the other %d); the stream holds one cancel per run",
		j.Sent-(runs-batch), j.Skipped)
}
