package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func TestMain(m *testing.M) {
	run.VerifyEncoding()
	runindex.VerifyBuild()
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bundle is what an integration test needs.
type bundle struct {
	srv    *embedded.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	names  subjects.Names
	store  RunStore
	loader *fakeLoader
	inputs jetstream.Stream
	// reg, when set, makes dispatcher() run the real engine on workflows
	// deployed there instead of the fake reducer.
	reg *registry.Registry
	// nodes, when set, are connections to distinct cluster nodes that
	// successive dispatchers use in turn.
	nodes []jetstream.JetStream
	next  int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := natstest.Server(t)
	nc := natstest.Conn(t, srv)
	js := natstest.JetStream(t, nc)
	b := &bundle{srv: srv, nc: nc, js: js, names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
	b.provision(t, provision.ProvisionOptions{})
	return b
}

// setupCluster is setup on a 3-node cluster with replicated streams and
// buckets; successive dispatchers connect to successive nodes.
func setupCluster(t *testing.T) *bundle {
	t.Helper()
	c := natstest.Cluster(t, 3)
	b := &bundle{names: subjects.Must(""), loader: &fakeLoader{prog: &fakeProgram{}}}
	for _, s := range c.Servers {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		b.nodes = append(b.nodes, natstest.JetStream(t, nc))
		if b.nc == nil {
			b.nc, b.js = nc, b.nodes[0]
		}
	}
	b.provision(t, provision.ProvisionOptions{Replicas: 3})
	return b
}

// provision creates the streams and buckets the dispatcher uses.
func (b *bundle) provision(t testing.TB, opts provision.ProvisionOptions) {
	t.Helper()
	ctx := testCtx(t)
	if err := provision.Provision(ctx, b.js, b.names, opts); err != nil {
		t.Fatal(err)
	}
	var err error
	if b.inputs, err = b.js.Stream(ctx, b.names.InputStream()); err != nil {
		t.Fatal(err)
	}
	if b.store, err = kvstore.OpenRunStore(ctx, b.js, b.names); err != nil {
		t.Fatal(err)
	}
}

func quietLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if f := os.Getenv("DISPATCHER_TEST_LOG"); f != "" {
		w, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// dispatcher starts a dispatcher over the fake reducer; it stops when the
// test ends.
func (b *bundle) dispatcher(t testing.TB, cfg Config) *Dispatcher {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger(t)
	}
	js, store := b.js, b.store
	if len(b.nodes) > 0 {
		js = b.nodes[b.next%len(b.nodes)]
		b.next++
		rs, err := kvstore.OpenRunStore(testCtx(t), js, b.names)
		if err != nil {
			t.Fatal(err)
		}
		store = rs
	}
	var d *Dispatcher
	var err error
	if b.reg != nil {
		d, err = New(js, nil, b.reg, cfg)
	} else {
		d, err = newDispatcher(js, store, b.loader, cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return running(t, d)
}

// running starts d and stops it when the test ends.
func running(t testing.TB, d *Dispatcher) *Dispatcher {
	t.Helper()
	if err := d.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return d
}

// publish publishes an input body (marshalled unless []byte) with an
// optional message id.
func (b *bundle) publish(t testing.TB, subject string, body any, msgID string) {
	t.Helper()
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	m := nats.NewMsg(subject)
	m.Data = data
	if msgID != "" {
		m.Header.Set(wire.HeaderMsgID, msgID)
	}
	if _, err := b.js.PublishMsg(testCtx(t), m); err != nil {
		t.Fatal(err)
	}
}

// startTask starts a run that invokes echo@1 with payload and ends with
// its output: workflow "one" on the engine, the fake's task shape
// otherwise.
func (b *bundle) startTask(t testing.TB, runID string, payload any) {
	t.Helper()
	if b.reg == nil {
		b.start(t, runID, map[string]any{"task": "echo", "version": "1", "payload": payload})
		return
	}
	in, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	b.publish(t, b.names.Start(runID), wire.Start{Workflow: "one", Input: in}, "start/"+runID)
}

func (b *bundle) start(t testing.TB, runID string, input any) {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	b.publish(t, b.names.Start(runID), wire.Start{Workflow: "fake", Input: in}, "start/"+runID)
}

// record reads a run's record, or nil when there is none.
func (b *bundle) record(t testing.TB, runID string) *runrecord.Record {
	t.Helper()
	data, _, err := b.store.Get(testCtx(t), runID)
	if err != nil {
		return nil
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// waitStatus waits until the run's record shows status, and returns it.
func (b *bundle) waitStatus(t testing.TB, runID, status string, timeout time.Duration) *runrecord.Record {
	t.Helper()
	var rec *runrecord.Record
	natstest.WaitFor(t, timeout, "run "+runID+" "+status, func() error {
		rec = b.record(t, runID)
		if rec == nil || rec.Status == nil {
			return errorf("no status yet")
		}
		if rec.Status.Status != status {
			return errorf("status %s", rec.Status.Status)
		}
		return nil
	})
	return rec
}

// consumerSettled waits until the dispatchers' consumers (the shared one
// or the partitions') have nothing pending or unacknowledged, and returns
// their sums.
func (b *bundle) consumerSettled(t testing.TB, timeout time.Duration) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	natstest.WaitFor(t, timeout, "dispatcher consumers drained", func() error {
		var err error
		if info, err = b.dispatcherConsumers(t); err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return errorf("pending %d, ack pending %d", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	return info
}

// dispatcherConsumers sums the counts of the dispatchers' consumers.
func (b *bundle) dispatcherConsumers(t testing.TB) (*jetstream.ConsumerInfo, error) {
	sum := &jetstream.ConsumerInfo{}
	in, err := b.js.Stream(testCtx(t), b.names.InputStream())
	if err != nil {
		return nil, err
	}
	names := in.ConsumerNames(testCtx(t))
	for name := range names.Name() {
		if !b.names.IsDispatcherConsumer(name) {
			continue
		}
		c, err := b.js.Consumer(testCtx(t), b.names.InputStream(), name)
		if err != nil {
			return nil, err
		}
		info, err := c.Info(testCtx(t))
		if err != nil {
			return nil, err
		}
		sum.NumPending += info.NumPending
		sum.NumAckPending += info.NumAckPending
		sum.NumRedelivered += info.NumRedelivered
		sum.Delivered.Consumer += info.Delivered.Consumer
	}
	if err := names.Err(); err != nil {
		return nil, err
	}
	return sum, nil
}

// partitions is the input stream's partition count.
func (b *bundle) partitions() int { return provision.Partitions(b.inputs.CachedInfo().Config) }

// storedOn is the subject an input published on subject is stored on.
func (b *bundle) storedOn(subject string) string { return b.names.StoredInput(subject, b.partitions()) }

// stored returns how many messages stream ever stored (its last
// sequence: each test has its own server, and the task stream deletes
// invocations once workers acknowledge them).
func (b *bundle) stored(t testing.TB, stream string) uint64 {
	t.Helper()
	s, err := b.js.Stream(testCtx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// publishAsync publishes without waiting for the acknowledgement; the
// test fails if any publish fails, and waits for all before it ends.
func (b *bundle) publishAsync(t testing.TB, subject string, body any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-f.Err():
		t.Fatal(err)
	default:
	}
}
