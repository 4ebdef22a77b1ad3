package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/integration/compat/fixture"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// testTimeout bounds each test's context.
const testTimeout = 3 * time.Minute

// deployment is one test's jetflow deployment of this build: f is its
// first fleet (connection, client, registry, run store); dispatchers and
// workers are added on connections of their own.
type deployment struct {
	t     *testing.T
	ctx   context.Context
	f     *fleet.Fleet
	names subjects.Names
	logs  *logBuffer
	tasks *taskLog
}

// newDeployment wraps a started fleet; it is stopped when the test ends.
func newDeployment(t *testing.T, ctx context.Context, f *fleet.Fleet, logs *logBuffer) *deployment {
	t.Helper()
	t.Cleanup(func() { stopWithin(t, "fleet", f.Stop) })
	return &deployment{t: t, ctx: ctx, f: f, names: f.Names, logs: logs, tasks: newTaskLog()}
}

// testContext is a context bounded by testTimeout, and a log buffer
// whose tail the test prints if it fails.
func testContext(t *testing.T) (context.Context, *logBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of this build's parts (tail):\n%s", tail(logs.String(), 80))
		}
	})
	return ctx, logs
}

func stopWithin(t *testing.T, what string, stop func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Errorf("stop %s: %v", what, err)
	}
}

// dispatcherConfig is every dispatcher of this build in these tests: the
// production defaults, but for AckWait.
func dispatcherConfig(ackWait time.Duration, logger *slog.Logger) dispatcher.Config {
	return dispatcher.Config{AckWait: ackWait, Logger: logger}
}

// addDispatcher starts a dispatcher of this build on its own connection.
func (d *deployment) addDispatcher(name string, ackWait time.Duration) *fleet.Fleet {
	d.t.Helper()
	log := d.logs.logger(name)
	cfg := dispatcherConfig(ackWait, log)
	f, err := fleet.Start(d.ctx, fleet.Config{
		URL: d.f.URL(), Prefix: d.names.Prefix(), SkipProvision: true,
		NATSOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
		Dispatcher:  &cfg, Logger: log,
	})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { stopWithin(d.t, name, f.Stop) })
	return f
}

// addWorker starts a worker of this build serving tasks, every
// invocation recorded in d.tasks.
func (d *deployment) addWorker(name string, tasks map[string]worker.Handler) {
	d.t.Helper()
	nc, err := nats.Connect(d.f.URL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		d.t.Fatal(err)
	}
	w, err := worker.New(js, worker.Config{Names: d.names, PollWait: 500 * time.Millisecond, Logger: d.logs.logger(name)})
	if err != nil {
		d.t.Fatal(err)
	}
	for task, h := range tasks {
		if err := w.Register(task, fixture.TaskVersion, d.tasks.counted(h)); err != nil {
			d.t.Fatal(err)
		}
	}
	if err := w.Start(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { stopWithin(d.t, name, w.Stop) })
}

// send sends one action to a run.
func (d *deployment) send(t testing.TB, runID string, a fixture.Action) {
	t.Helper()
	var err error
	switch a.Kind {
	case fixture.ActionEvent:
		err = d.f.Client.SendEvent(d.ctx, runID, a.Event, a.Payload)
	case fixture.ActionCancel:
		err = d.f.Client.Cancel(d.ctx, runID, a.Reason)
	default:
		err = fmt.Errorf("unknown action kind %q", a.Kind)
	}
	if err != nil {
		t.Fatalf("%s to run %s: %v", a.Kind, runID, err)
	}
}

// status reads a run's status from its record; nil when it has none.
func (d *deployment) status(t testing.TB, runID string) *wire.Status {
	t.Helper()
	st, err := d.f.Client.Status(d.ctx, runID)
	if errors.Is(err, client.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("status of run %s: %v", runID, err)
	}
	return st
}

// outcomeOf is a status as a fixture outcome.
func outcomeOf(st *wire.Status) fixture.Outcome {
	if st == nil {
		return fixture.Outcome{}
	}
	o := fixture.Outcome{Status: st.Status, State: st.State, Result: st.Result}
	if st.Error != nil {
		o.ErrorCode = st.Error.Code
	}
	return o
}

// sameOutcome says how got differs from want, "" when it does not.
func sameOutcome(got, want fixture.Outcome) string {
	if got.Status == want.Status && got.State == want.State && got.ErrorCode == want.ErrorCode &&
		canonical(got.Result) == canonical(want.Result) {
		return ""
	}
	return fmt.Sprintf("is %q in %q with result %s, error code %q; want %q in %q with result %s, error code %q",
		got.Status, got.State, got.Result, got.ErrorCode, want.Status, want.State, want.Result, want.ErrorCode)
}

// canonical is a JSON text with sorted keys and no spaces ("" for none).
func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON " + string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "invalid JSON " + string(raw)
	}
	return string(out)
}

// consumerSettled waits until the dispatchers' consumer has nothing
// pending or unacknowledged.
func (d *deployment) consumerSettled(t testing.TB, timeout time.Duration) {
	t.Helper()
	natstest.WaitFor(t, timeout, "the dispatcher consumer drained", func() error {
		c, err := d.f.JS.Consumer(d.ctx, d.names.InputStream(), d.names.DispatcherConsumer())
		if err != nil {
			return err
		}
		info, err := c.Info(d.ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("pending %d, unacknowledged %d", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}

// lastSeq is the last sequence a stream stored.
func (d *deployment) lastSeq(t testing.TB, stream string) uint64 {
	t.Helper()
	s, err := d.f.JS.Stream(d.ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(d.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// storedRecord is a run record as the run bucket holds it: its revision
// and bytes, and the fields that docs/PROTOCOL.md §8 documents for
// observers and these tests read.
type storedRecord struct {
	Revision uint64
	Value    []byte
	recordFields
}

type recordFields struct {
	Applied  []uint64    `json:"applied"`
	Rejected []rejection `json:"rejected"`
	Outbox   []outgoing  `json:"outbox"`
}

type rejection struct {
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// outgoing is one message of a record's outbox.
type outgoing struct {
	Kind string `json:"kind"` // "invoke", "timer", "status", ...
}

// owesInvocation says whether the record's outbox holds a task
// invocation.
func (r *storedRecord) owesInvocation() bool {
	return r != nil && slices.ContainsFunc(r.Outbox, func(o outgoing) bool { return o.Kind == "invoke" })
}

// refused lists the sequences of the inputs the record refused.
func (r *storedRecord) refused() []uint64 {
	if r == nil {
		return nil
	}
	var seqs []uint64
	for _, rj := range r.Rejected {
		seqs = append(seqs, rj.Seq)
	}
	return seqs
}

// record reads a run's record; nil when it has none.
func (d *deployment) record(t testing.TB, runID string) *storedRecord {
	t.Helper()
	kv, err := d.f.JS.KeyValue(d.ctx, d.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(d.ctx, runID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("record of run %s: %v", runID, err)
	}
	rec := &storedRecord{Revision: e.Revision(), Value: e.Value()}
	if err := json.Unmarshal(e.Value(), &rec.recordFields); err != nil {
		t.Fatalf("record of run %s is not the documented JSON: %v", runID, err)
	}
	return rec
}

// runIDs lists the keys of the run bucket.
func (d *deployment) runIDs(t testing.TB) []string {
	t.Helper()
	kv, err := d.f.JS.KeyValue(d.ctx, d.names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	lister, err := kv.ListKeys(d.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for k := range lister.Keys() {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	return ids
}

// appliedWindow is how many inputs a record lists in applied
// (dispatcher.Config.AppliedHistory's default); a longer history cannot
// be checked input by input.
const appliedWindow = 128

// checkOnce checks a settled run's record against its history: the
// start and every other input applied exactly once or refused, and no
// result of a task attempt applied twice. The only refusals allowed are
// those listed in known (made before) and those of timer fires: a timer
// that fires twice, or whose schedule a dispatcher published again after
// it fired, is refused (docs/ARCHITECTURE.md, "A timer fires twice").
func (d *deployment) checkOnce(t testing.TB, runID string, known []uint64) {
	t.Helper()
	rec := d.record(t, runID)
	if rec == nil {
		t.Errorf("run %s has no record", runID)
		return
	}
	history, err := replay.ReadHistory(d.ctx, d.f.JS, d.names, runID)
	if err != nil {
		t.Errorf("history of run %s: %v", runID, err)
		return
	}
	if len(history) >= appliedWindow {
		t.Errorf("run %s: %d inputs, more than a record lists; this check cannot see them all", runID, len(history))
		return
	}
	applied := map[uint64]int{}
	for _, seq := range rec.Applied {
		applied[seq]++
	}
	refused := map[uint64]bool{}
	for _, rj := range rec.Rejected {
		refused[rj.Seq] = true
		if rj.Kind != subjects.KindTimer && !slices.Contains(known, rj.Seq) {
			t.Errorf("run %s: %s input %d refused: %s", runID, rj.Kind, rj.Seq, rj.Reason)
		}
	}
	starts := 0
	results := map[string]int{}
	for _, m := range history {
		_, kind, _, err := d.names.ParseInput(m.Subject)
		if err != nil {
			t.Errorf("run %s: input %d on %s: %v", runID, m.Seq, m.Subject, err)
			continue
		}
		n := applied[m.Seq]
		switch {
		case n == 0 && !refused[m.Seq]:
			t.Errorf("run %s: %s input %d neither applied nor refused", runID, kind, m.Seq)
		case n > 1:
			t.Errorf("run %s: %s input %d applied %d times", runID, kind, m.Seq, n)
		case n > 0 && refused[m.Seq]:
			t.Errorf("run %s: %s input %d both applied and refused", runID, kind, m.Seq)
		}
		if n == 0 {
			continue
		}
		switch kind {
		case subjects.KindStart:
			starts++
		case subjects.KindResult:
			var res wire.Result
			if err := json.Unmarshal(m.Data, &res); err != nil {
				t.Errorf("run %s: result %d: %v", runID, m.Seq, err)
				continue
			}
			k := fmt.Sprintf("%s node %s attempt %d", res.Activation, res.Node, res.Attempt)
			if results[k]++; results[k] == 2 {
				t.Errorf("run %s: the result of %s applied twice", runID, k)
			}
		}
	}
	if starts != 1 {
		t.Errorf("run %s: %d starts applied, want 1", runID, starts)
	}
}

// checkReplay checks that the run's history, replayed by this build,
// rebuilds its saved state exactly.
func (d *deployment) checkReplay(t testing.TB, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	rep, err := replay.Check(ctx, replay.Source{JS: d.f.JS, Names: d.names, Registry: d.f.Registry, Runs: d.f.Runs}, runID)
	if err != nil {
		t.Errorf("replay of run %s: %v", runID, err)
		return
	}
	if !rep.Equal {
		t.Errorf("replay of run %s diverges at %q: saved %s, rebuilt %s (%d messages, order %s, notes %v, skipped %+v)",
			runID, rep.Divergence, rep.SavedValue, rep.RebuiltValue, rep.Info.Messages, rep.Info.Order, rep.Info.Notes, rep.Info.Skipped)
	}
}

// checkReplays replays runs, a few at a time.
func (d *deployment) checkReplays(t testing.TB, runIDs []string) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, id := range runIDs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d.checkReplay(t, id)
		})
	}
	wg.Wait()
}

// taskLog records every invocation the workers ran.
type taskLog struct {
	mu   sync.Mutex
	runs map[string][]worker.Invocation
	n    int
}

func newTaskLog() *taskLog { return &taskLog{runs: map[string][]worker.Invocation{}} }

func (l *taskLog) counted(h worker.Handler) worker.Handler {
	return func(ctx context.Context, inv worker.Invocation) (any, error) {
		l.mu.Lock()
		l.runs[inv.Run] = append(l.runs[inv.Run], inv)
		l.n++
		l.mu.Unlock()
		return h(ctx, inv)
	}
}

// total is how many invocations ran.
func (l *taskLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// repeated lists the task attempts of a run that ran more than once, and
// the most times any attempt ran.
func (l *taskLog) repeated(runID string) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	most := 0
	for _, inv := range l.runs[runID] {
		k := fmt.Sprintf("%s node %s attempt %d", inv.Activation, inv.Node, inv.Attempt)
		seen[k]++
		most = max(most, seen[k])
	}
	var out []string
	for k, n := range seen {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ran %d times", k, n))
		}
	}
	slices.Sort(out)
	return out, most
}

// logBuffer collects the logs of a test's parts.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// logger logs warnings and errors of one part.
func (b *logBuffer) logger(part string) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn})).With("part", part)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
