package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// testTimeout bounds every test's context.
const testTimeout = 3 * time.Minute

// none asks setup for no dispatcher or no worker.
const none = -1

// options shape one test's deployment. The zero value is one dispatcher
// and one worker on a fresh embedded server.
type options struct {
	// dispatchers in this process (0: one; none: zero).
	dispatchers int
	// workers, each on its own connection (0: one; none: zero).
	workers int
	// dispatcher is the base config of every dispatcher; dispatcherConfig
	// fills in the tests' defaults.
	dispatcher dispatcher.Config
	provision  provision.ProvisionOptions
	// taskPolicy of every task consumer (default the SDK's).
	taskPolicy provision.TaskPolicy
	// logLevel of the captured logs (default Info).
	logLevel slog.Level
	// workerConcurrency per task version (default the SDK's).
	workerConcurrency int
	// redeliveries lets task attempts run again when NATS redelivers them
	// (an acknowledgement lost to a server outage).
	redeliveries bool
	// timeout bounds the test's context, which the workers live by
	// (default testTimeout).
	timeout time.Duration
}

// env is one test's deployment: an embedded server with a file store in
// t.TempDir(), the fleet (with its first dispatcher), more dispatchers
// and workers on their own connections, every workflow deployed, and the
// captured logs and metrics.
type env struct {
	t     *testing.T
	ctx   context.Context
	opts  options
	f     *fleet.Fleet
	names subjects.Names
	reg   *prometheus.Registry
	logs  *logSink
	tasks *taskLog
	// dispatchers are the fleets of the in-process dispatchers.
	dispatchers []*fleet.Fleet
	workers     []*worker.Worker
	// restarted is when the test started the stopped server again (zero
	// when it never did): taskLog.repeated allows one copy of an
	// invocation after it.
	restarted time.Time
}

// retryPolicy is every task's retry policy in these tests: three attempts
// at short intervals.
func retryPolicy(string, string) run.RetryPolicy {
	return run.RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 20, MaxIntervalMs: 50, Multiplier: 2}
}

// dispatcherConfig fills in the tests' defaults: short retry intervals
// and a short wait for inputs of unknown runs.
func dispatcherConfig(c dispatcher.Config) dispatcher.Config {
	if c.RunOptions.Retry == nil {
		c.RunOptions.Retry = retryPolicy
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = 50 * time.Millisecond
	}
	if c.MaxRetryDelay == 0 {
		c.MaxRetryDelay = time.Second
	}
	if c.UnknownRunWait == 0 {
		c.UnknownRunWait = time.Second
	}
	return c
}

func setup(t *testing.T, opts options) *env {
	t.Helper()
	if opts.timeout == 0 {
		opts.timeout = testTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.timeout)
	t.Cleanup(cancel)
	if opts.logLevel == 0 {
		opts.logLevel = slog.LevelInfo
	}
	e := &env{t: t, ctx: ctx, opts: opts, reg: prometheus.NewRegistry(), logs: newLogSink(opts.logLevel), tasks: newTaskLog()}
	t.Cleanup(func() { e.logs.dumpIfFailed(t) })
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{
			Listen: "127.0.0.1:-1", DataDir: t.TempDir(), ServerName: "it",
			Logger: e.logs.logger("nats-server"), ReadyTimeout: natstest.StartTimeout,
		},
		NATSOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
		Provision:   opts.provision,
		TaskPolicy:  opts.taskPolicy,
		Registerer:  e.reg,
		Logger:      e.logs.logger("fleet"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopWithin(t, "fleet", f.Stop) })
	e.f, e.names = f, f.Names
	// Registered after the fleet's stop, so it runs before it.
	t.Cleanup(func() { e.checkNoneStranded(t) })
	for name, doc := range workflows {
		if _, err := f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatalf("deploy %s: %v", name, err)
		}
	}
	for range count(opts.dispatchers) {
		e.addDispatcher(dispatcher.Config{})
	}
	for range count(opts.workers) {
		e.addWorker()
	}
	return e
}

func count(n int) int {
	switch n {
	case 0:
		return 1
	case none:
		return 0
	}
	return n
}

func stopWithin(t *testing.T, what string, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Errorf("stop %s: %v", what, err)
	}
}

// addDispatcher starts one more dispatcher in this process, on its own
// connection, with the test's base config overridden by the non-zero
// fields of extra. It stops when the test ends (or with stop).
func (e *env) addDispatcher(extra dispatcher.Config) *fleet.Fleet {
	e.t.Helper()
	cfg := e.opts.dispatcher
	if extra.CrashHook != nil {
		cfg.CrashHook = extra.CrashHook
	}
	if extra.AckWait != 0 {
		cfg.AckWait = extra.AckWait
	}
	if extra.Retention != 0 {
		cfg.Retention = extra.Retention
	}
	if extra.Schedules.LateAfter != 0 {
		cfg.Schedules.LateAfter = extra.Schedules.LateAfter
	}
	cfg = dispatcherConfig(cfg)
	cfg.Logger = e.logs.logger(fmt.Sprintf("dispatcher-%d", len(e.dispatchers)+1))
	f, err := fleet.Start(e.ctx, fleet.Config{
		URL: e.f.URL(), Prefix: e.names.Prefix(), SkipProvision: true,
		NATSOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
		Dispatcher:  &cfg, Registerer: e.reg, Logger: cfg.Logger,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { stopWithin(e.t, "dispatcher", f.Stop) })
	e.dispatchers = append(e.dispatchers, f)
	return f
}

// addWorker starts a worker serving every task of tasks_test.go on its own
// connection.
func (e *env) addWorker() *worker.Worker {
	e.t.Helper()
	return e.addWorkerWith(time.Second)
}

// addWorkerWith is addWorker with the worker's PollWait.
func (e *env) addWorkerWith(pollWait time.Duration) *worker.Worker {
	e.t.Helper()
	nc, err := nats.Connect(e.f.URL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := worker.New(js, worker.Config{
		Names: e.names, Concurrency: e.opts.workerConcurrency, PollWait: pollWait,
		Logger: e.logs.logger(fmt.Sprintf("worker-%d", len(e.workers)+1)),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for name, h := range e.tasks.handlers() {
		if err := w.Register(name, "1", e.tasks.counted(h)); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { stopWithin(e.t, "worker", w.Stop) })
	e.workers = append(e.workers, w)
	return w
}

// start starts a run; input is marshalled.
func (e *env) start(t testing.TB, workflow, runID string, input any) {
	t.Helper()
	if err := e.f.Client.StartRun(e.ctx, workflow, runID, input); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the run to settle, within timeout.
func (e *env) wait(t testing.TB, runID string, timeout time.Duration) *wire.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	st, err := e.f.Client.Wait(ctx, runID)
	if err != nil {
		e.diagnose(t, runID)
		t.Fatalf("run %s did not settle: %v", runID, err)
	}
	return st
}

// waitStatus waits until the run's record shows status (terminal or not).
func (e *env) waitStatus(t testing.TB, runID, status string, timeout time.Duration) *wire.Status {
	t.Helper()
	var st *wire.Status
	natstest.WaitFor(t, timeout, "run "+runID+" "+status, func() error {
		var err error
		if st, err = e.f.Client.Status(e.ctx, runID); err != nil {
			return err
		}
		if st.Status != status {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
	return st
}

// record reads a run's record, nil when it has none.
func (e *env) record(t testing.TB, runID string) *runrecord.Record {
	t.Helper()
	data, _, err := e.f.Runs.Get(e.ctx, runID)
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// checkRecord checks that the run applied each input once and refused
// exactly rejected of them, and that each task attempt ran once.
func (e *env) checkRecord(t testing.TB, runID string, rejected int) *runrecord.Record {
	t.Helper()
	rec := e.record(t, runID)
	if rec == nil {
		t.Fatalf("run %s has no record", runID)
	}
	applied := slices.Clone(rec.Applied)
	slices.Sort(applied)
	if len(slices.Compact(applied)) != len(rec.Applied) {
		t.Errorf("run %s: an input applied twice: %v", runID, rec.Applied)
	}
	if len(rec.Rejected) != rejected {
		t.Errorf("run %s: %d rejections %+v, want %d", runID, len(rec.Rejected), rec.Rejected, rejected)
	}
	if r := e.tasks.repeated(runID, e.opts.redeliveries, e.restarted); len(r) > 0 {
		t.Errorf("run %s: task attempts repeated: %v", runID, r)
	}
	return rec
}

// consumerSettled waits until the dispatchers' consumers have nothing
// pending or unacknowledged.
func (e *env) consumerSettled(t testing.TB, timeout time.Duration) {
	t.Helper()
	natstest.WaitFor(t, timeout, "dispatcher consumers drained", func() error {
		sum, err := e.inputConsumers()
		if err != nil {
			return err
		}
		if sum.NumPending != 0 || sum.NumAckPending != 0 {
			return fmt.Errorf("pending %d, ack pending %d", sum.NumPending, sum.NumAckPending)
		}
		return nil
	})
}

// inputConsumers sums the counts of the dispatchers' consumers of the
// input stream: one per partition (and the shared one of a migrated
// stream), or the shared one.
func (e *env) inputConsumers() (jetstream.ConsumerInfo, error) {
	var sum jetstream.ConsumerInfo
	s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		return sum, err
	}
	n := 0
	for info := range s.ListConsumers(e.ctx).Info() {
		if !e.names.IsDispatcherConsumer(info.Name) {
			continue
		}
		n++
		sum.NumPending += info.NumPending
		sum.NumAckPending += info.NumAckPending
		sum.NumRedelivered += info.NumRedelivered
	}
	if n == 0 {
		return sum, errors.New("no dispatcher consumer yet")
	}
	return sum, nil
}

// lastSeq is the last sequence a stream stored: how many messages it ever
// held (the task stream deletes invocations once acknowledged).
func (e *env) lastSeq(t testing.TB, stream string) uint64 {
	t.Helper()
	s, err := e.f.JS.Stream(e.ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// canonical returns the canonical form of a JSON text.
func canonical(t testing.TB, data string) string {
	t.Helper()
	v, err := value.Decode([]byte(data), value.DefaultLimits)
	if err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return value.MustCanonical(v)
}

// checkNoneStranded fails the test if any run it leaves behind has no way
// forward of its own (run.State.Stranded): every future path that could
// strand a run fails here, in whichever test takes it.
func (e *env) checkNoneStranded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	entries, err := e.f.Runs.List(ctx, nil)
	if err != nil {
		t.Errorf("list runs for the stranding check: %v", err)
		return
	}
	for _, en := range entries {
		rec, err := runrecord.Decode(en.Data)
		if errors.Is(err, runrecord.ErrRemoved) {
			continue // removed by retention: settled, nothing to strand
		}
		if err != nil {
			t.Errorf("run %s: %v", en.RunID, err)
			continue
		}
		st, err := step.DecodeState(rec)
		if err != nil {
			t.Errorf("run %s: %v", en.RunID, err)
			continue
		}
		if err := st.Stranded(); err != nil {
			t.Errorf("stranded: %v", err)
		}
	}
}
