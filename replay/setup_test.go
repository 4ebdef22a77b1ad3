package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

func TestMain(m *testing.M) {
	run.VerifyEncoding()
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

// bound bounds every wait of these tests.
const bound = 60 * time.Second

// docs are the workflows the tests run, by name.
var docs = map[string]string{
	"one": `{"$workflow":"0.2","revision":"one-1","initial":"a","states":{
 "a":{"work":{"task":"double","version":"1"},"then":"b"},"b":{"final":true}}}`,
	"fanout": `{"$workflow":"0.2","revision":"fan-1","initial":"all","states":{
 "all":{"work":{"dag":{"$dag":"0.1","nodes":{
   "in":{"kind":"input"},
   "a":{"kind":"task","run":"double","version":"1"},
   "b":{"kind":"task","run":"double","version":"1"},
   "c":{"kind":"task","run":"square","version":"1"},
   "d":{"kind":"task","run":"square","version":"1"},
   "sum":{"kind":"query","query":{"a":"$.a","b":"$.b","c":"$.c","d":"$.d"}},
   "out":{"kind":"output"}},
  "edges":[{"from":"in","to":"a"},{"from":"in","to":"b"},{"from":"in","to":"c"},{"from":"in","to":"d"},
   {"from":"a","to":"sum","port":"a"},{"from":"b","to":"sum","port":"b"},
   {"from":"c","to":"sum","port":"c"},{"from":"d","to":"sum","port":"d"},{"from":"sum","to":"out"}]}},
  "then":"done"},
 "done":{"final":true}}}`,
	"event": `{"$workflow":"0.2","revision":"ev-1","initial":"wait","states":{
 "wait":{"on":[{"event":"go","to":"work"}]},
 "work":{"work":{"task":"double","version":"1"},"input":"$.context.event.payload.n","then":"done"},
 "done":{"final":true}}}`,
	"timer": `{"$workflow":"0.2","revision":"tm-1","initial":"wait","states":{
 "wait":{"on":[{"event":"never","to":"done"}],"after":{"ms":150,"to":"late"}},
 "late":{"work":{"task":"double","version":"1"},"then":"done"},
 "done":{"final":true}}}`,
	"catch": `{"$workflow":"0.2","revision":"ca-1","initial":"a","states":{
 "a":{"work":{"task":"fail","version":"1"},"then":"ok","catch":"caught"},
 "ok":{"final":true},"caught":{"final":true}}}`,
	"either": `{"$workflow":"0.2","revision":"ei-1","initial":"wait","states":{
 "wait":{"on":[{"event":"a","to":"a"},{"event":"b","to":"b"}]},
 "a":{"final":true},"b":{"final":true}}}`,
	"retry": `{"$workflow":"0.2","revision":"re-1","initial":"a","states":{
 "a":{"work":{"task":"flaky","version":"1"},"then":"b"},"b":{"final":true}}}`,
}

// runOptions retries flaky quickly; the replay must use the same.
var runOptions = run.Options{Retry: func(task, _ string) run.RetryPolicy {
	if task == "flaky" {
		return run.RetryPolicy{MaxAttempts: 3, InitialIntervalMs: 20, MaxIntervalMs: 50}
	}
	return run.RetryPolicy{}
}}

// unknownRunWait is short so that an input for a run that never starts
// is given up on (and the dispatchers go idle) within a test.
const unknownRunWait = 2 * time.Second

type bundle struct {
	f   *fleet.Fleet
	src replay.Source
	ctx context.Context
}

// setup starts an embedded deployment with `dispatchers` competing
// dispatchers, deploys docs and serves their tasks with the Go SDK.
// Records keep the last appliedHistory applied inputs (0: default).
func setup(t testing.TB, prov provision.ProvisionOptions, dispatchers, appliedHistory int) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	quiet := slog.New(slog.DiscardHandler)
	dc := dispatcher.Config{
		RunOptions: runOptions, AppliedHistory: appliedHistory,
		RetryDelay: 20 * time.Millisecond, UnknownRunWait: unknownRunWait, Logger: quiet,
	}
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: quiet},
		Provision:  prov,
		Dispatcher: &dc,
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	for i := 1; i < dispatchers; i++ {
		dci := dc
		dci.Names = f.Names
		d, err := dispatcher.New(f.JS, f.Runs, f.Registry, dci)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Stop(context.Background()) })
	}
	for name, doc := range docs {
		if _, err := f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatalf("deploy %s: %v", name, err)
		}
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	num := func(inv worker.Invocation) (float64, error) {
		var n float64
		err := inv.DecodeInput(&n)
		return n, err
	}
	handlers := map[string]worker.Handler{
		"double": func(_ context.Context, inv worker.Invocation) (any, error) { n, err := num(inv); return 2 * n, err },
		"square": func(_ context.Context, inv worker.Invocation) (any, error) { n, err := num(inv); return n * n, err },
		"fail": func(context.Context, worker.Invocation) (any, error) {
			return nil, worker.WithCode("STOCK", worker.NonRetryable(errors.New("out of stock")))
		},
		"flaky": func(_ context.Context, inv worker.Invocation) (any, error) {
			if inv.Attempt < 3 {
				return nil, fmt.Errorf("attempt %d fails", inv.Attempt)
			}
			return map[string]any{"attempt": inv.Attempt}, nil
		},
	}
	for task, h := range handlers {
		if err := w.Register(task, "1", h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return &bundle{f: f, ctx: ctx, src: replay.Source{
		JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs,
		Settings: step.Settings{AppliedHistory: appliedHistory}, RunOptions: runOptions,
	}}
}

// wait waits until run id is terminal and the dispatchers have handled
// every input (so the record reflects the whole history).
func (b *bundle) wait(t *testing.T, id string) *wire.Status {
	t.Helper()
	st, err := b.f.Client.Wait(b.ctx, id)
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	b.settled(t)
	return st
}

// settled waits until the dispatchers' consumer has nothing pending.
func (b *bundle) settled(t testing.TB) {
	t.Helper()
	natstest.WaitFor(t, bound, "dispatchers idle", func() error {
		// Every dispatcher consumer: one per partition, or the shared one.
		s, err := b.f.JS.Stream(b.ctx, b.f.Names.InputStream())
		if err != nil {
			return err
		}
		// Drain the lister before judging: leaving its channel unread
		// strands the goroutine that feeds it.
		var infos []*jetstream.ConsumerInfo
		lister := s.ListConsumers(b.ctx)
		for ci := range lister.Info() {
			if b.f.Names.IsDispatcherConsumer(ci.Name) {
				infos = append(infos, ci)
			}
		}
		if err := lister.Err(); err != nil {
			return err
		}
		for _, ci := range infos {
			if ci.NumPending+uint64(ci.NumAckPending)+uint64(ci.NumRedelivered) > 0 {
				return fmt.Errorf("%s: pending %d, ack pending %d, redelivered %d", ci.Name, ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
			}
		}
		if len(infos) == 0 {
			return fmt.Errorf("no dispatcher consumer yet")
		}
		return nil
	})
}

func (b *bundle) record(t *testing.T, id string) []byte {
	t.Helper()
	data, _, err := b.f.Runs.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// deleteRecord loses the run's record, as a lost bucket would.
func (b *bundle) deleteRecord(t *testing.T, id string) {
	t.Helper()
	kv, err := b.f.JS.KeyValue(b.ctx, b.f.Names.RunBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(b.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.f.Runs.Get(b.ctx, id); !errors.Is(err, kvstore.ErrRunNotFound) {
		t.Fatalf("record of %s after delete: %v", id, err)
	}
}

// checkEqual asserts that Check rebuilds the saved state and the whole
// saved record byte for byte.
func (b *bundle) checkEqual(t *testing.T, id string) replay.Report {
	t.Helper()
	saved := b.record(t, id)
	rep, err := replay.Check(b.ctx, b.src, id)
	if err != nil {
		t.Fatalf("check %s: %v", id, err)
	}
	if !rep.Equal {
		t.Fatalf("check %s: state differs at %q: saved %s, rebuilt %s\nsaved:   %s\nrebuilt: %s", id, rep.Divergence, rep.SavedValue, rep.RebuiltValue, rep.Saved, rep.Rebuilt)
	}
	rebuilt, err := rep.Info.Record.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rebuilt, saved) {
		p, x, y := replay.Diverge(saved, rebuilt)
		t.Fatalf("check %s: record differs at %q: saved %s, rebuilt %s", id, p, x, y)
	}
	return rep
}

func (b *bundle) inputStream(t *testing.T) jetstream.Stream {
	t.Helper()
	s, err := b.f.JS.Stream(b.ctx, b.f.Names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
