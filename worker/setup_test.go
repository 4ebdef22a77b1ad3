package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// wait bounds every wait on a signal in these tests.
const wait = 15 * time.Second

const (
	task    = "charge"
	version = "1.0"
)

// bundle is what an integration test needs: a server with the task and
// input streams, and every message published on a result subject.
type bundle struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	names   subjects.Names
	results chan *nats.Msg
	logs    *logSink
}

func setup(t *testing.T) *bundle { return setupWith(t, 0) }

// setupWith caps the streams' message size (0: the server's max payload).
func setupWith(t *testing.T, maxMsgSize int32) *bundle {
	t.Helper()
	s := natstest.Server(t, natstest.WithMemoryStore())
	nc := natstest.Conn(t, s)
	js := natstest.JetStream(t, nc)
	b := &bundle{nc: nc, js: js, names: subjects.Must("wt"), results: make(chan *nats.Msg, 1024), logs: &logSink{}}
	ctx := testCtx(t)
	// The streams as a deployment provisions them.
	opts := provision.ProvisionOptions{Storage: jetstream.MemoryStorage, MaxMsgSize: maxMsgSize}
	for _, cfg := range []jetstream.StreamConfig{provision.TaskStreamConfig(b.names, opts), provision.InputStreamConfig(b.names, opts)} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := nc.ChanSubscribe(b.names.InputAll(), b.results)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// ensure creates the task consumer as a deployment would.
func (b *bundle) ensure(t *testing.T, p worker.TaskPolicy) jetstream.Consumer {
	t.Helper()
	c, err := provision.EnsureTaskConsumer(testCtx(t), b.js, b.names, task, version, provision.TaskPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// config is a worker config for tests: short polls and a captured log.
func (b *bundle) config() worker.Config {
	return worker.Config{Names: b.names, PollWait: 100 * time.Millisecond, Logger: slog.New(b.logs)}
}

// start registers h for the test task, starts the worker and stops it
// (gracefully, bounded) when the test ends.
func (b *bundle) start(t *testing.T, cfg worker.Config, h worker.Handler) *worker.Worker {
	t.Helper()
	w, err := worker.New(b.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register(task, version, h); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return w
}

// invocation is a valid invocation of the test task for node.
func (b *bundle) invocation(node string, input any) wire.Invocation {
	in, err := json.Marshal(input)
	if err != nil {
		panic(err)
	}
	return wire.Invocation{
		Run: "r1", Activation: `["r1","/states/pay",1]`, State: "/states/pay", Node: node,
		Task: task, Version: version, Attempt: 1, Input: in, Token: "tok-" + node, Reply: b.names.Result("r1"),
	}
}

func (b *bundle) publish(t *testing.T, inv wire.Invocation) {
	t.Helper()
	body, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	b.publishRaw(t, body)
}

func (b *bundle) publishRaw(t *testing.T, body []byte) {
	t.Helper()
	if _, err := b.js.Publish(testCtx(t), b.names.Task(task, version), body); err != nil {
		t.Fatal(err)
	}
}

// result waits for the next result message.
func (b *bundle) result(t *testing.T) (wire.Result, *nats.Msg) {
	t.Helper()
	select {
	case m := <-b.results:
		var r wire.Result
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("result %q: %v", m.Data, err)
		}
		return r, m
	case <-time.After(wait):
		t.Fatal("no result published")
		return wire.Result{}, nil
	}
}

// results waits for n results, keyed by node.
func (b *bundle) resultsByNode(t *testing.T, n int) map[string]wire.Result {
	t.Helper()
	got := map[string]wire.Result{}
	for range n {
		r, _ := b.result(t)
		if _, dup := got[r.Node]; dup {
			t.Fatalf("two results for node %q", r.Node)
		}
		got[r.Node] = r
	}
	return got
}

// streamMsgs is how many invocations the task stream still holds (acked
// or terminated ones are removed: it is a work queue).
func (b *bundle) streamMsgs(t *testing.T) uint64 {
	t.Helper()
	s, err := b.js.Stream(testCtx(t), b.names.TaskStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func (b *bundle) waitStreamMsgs(t *testing.T, want uint64) {
	t.Helper()
	natstest.WaitFor(t, wait, fmt.Sprintf("task stream holds %d messages", want), func() error {
		if got := b.streamMsgs(t); got != want {
			return fmt.Errorf("it holds %d", got)
		}
		return nil
	})
}

func (b *bundle) consumerInfo(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := b.js.Consumer(testCtx(t), b.names.TaskStream(), b.names.TaskConsumer(task, version))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// logSink is a slog.Handler that keeps every record's text.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrSink{l: l, attrs: as}
}
func (l *logSink) WithGroup(string) slog.Handler { return l }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	return (&attrSink{l: l}).Handle(context.Background(), r)
}

// contains reports whether one line holds every part.
func (l *logSink) contains(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
outer:
	for _, line := range l.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue outer
			}
		}
		return true
	}
	return false
}

type attrSink struct {
	l     *logSink
	attrs []slog.Attr
}

func (a *attrSink) Enabled(context.Context, slog.Level) bool { return true }
func (a *attrSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrSink{l: a.l, attrs: append(append([]slog.Attr{}, a.attrs...), as...)}
}
func (a *attrSink) WithGroup(string) slog.Handler { return a }
func (a *attrSink) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s", r.Level, r.Message)
	for _, at := range a.attrs {
		fmt.Fprintf(&sb, " %s=%v", at.Key, at.Value)
	}
	r.Attrs(func(at slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", at.Key, at.Value)
		return true
	})
	a.l.mu.Lock()
	a.l.lines = append(a.l.lines, sb.String())
	a.l.mu.Unlock()
	return nil
}

// terminations receives the reason of every invocation a worker
// terminates, from the server's advisories.
func (b *bundle) terminations(t *testing.T) <-chan string {
	t.Helper()
	terms := make(chan string, 16)
	sub, err := b.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", func(m *nats.Msg) {
		var adv struct{ Reason string }
		_ = json.Unmarshal(m.Data, &adv)
		terms <- adv.Reason
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return terms
}
