package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// logSink captures every component's log lines for assertions, and shows
// their tail when a test fails.
type logSink struct {
	level slog.Level
	mu    sync.Mutex
	buf   bytes.Buffer
}

func newLogSink(level slog.Level) *logSink { return &logSink{level: level} }

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) logger(component string) *slog.Logger {
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: s.level})).With("component", component)
}

// lines returns the captured lines that contain every one of parts.
func (s *logSink) lines(parts ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for line := range strings.Lines(s.buf.String()) {
		if all(line, parts) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}

func all(line string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(line, p) {
			return false
		}
	}
	return true
}

// dumpIfFailed logs the last lines when t failed, and writes them all to
// $JETFLOW_IT_LOGDIR/<test>.log when that is set.
func (s *logSink) dumpIfFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	if dir := os.Getenv("JETFLOW_IT_LOGDIR"); dir != "" {
		name := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".log")
		s.mu.Lock()
		err := os.WriteFile(name, s.buf.Bytes(), 0o644)
		s.mu.Unlock()
		t.Logf("all log lines in %s (%v)", name, err)
	}
	lines := s.lines()
	if len(lines) > 300 {
		lines = lines[len(lines)-300:]
	}
	t.Logf("last %d log lines:\n%s", len(lines), strings.Join(lines, "\n"))
}

// metric sums the samples of the named metric family (counters and
// histogram counts) whose labels include every pair of labels.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}) {
					continue samples
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// Dispatcher metric names.
const (
	mMessages = "jetflow_dispatcher_messages_total"
	mStarted  = "jetflow_dispatcher_runs_started_total"
	mSettled  = "jetflow_dispatcher_runs_settled_total"
	mConflict = "jetflow_dispatcher_cas_conflicts_total"
	mRedeliv  = "jetflow_dispatcher_redeliveries_total"
)

// messages is the dispatchers' count of inputs of kind ("" any) handled
// with outcome.
func (e *env) messages(t testing.TB, kind, outcome string) float64 {
	t.Helper()
	labels := []string{"outcome", outcome}
	if kind != "" {
		labels = append(labels, "kind", kind)
	}
	return metric(t, e.reg, mMessages, labels...)
}

// diagnose logs what a stuck run's record, history, consumers and task
// attempts look like.
func (e *env) diagnose(t testing.TB, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := e.record(t, runID)
	data, _ := json.Marshal(rec)
	// (A record holding large payloads would flood the log.)
	t.Logf("record of %s (%d bytes): %.8192s", runID, len(data), data)
	if oc, err := e.f.JS.OrderedConsumer(ctx, e.names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{e.names.RunInputs(runID)}}); err == nil {
		if batch, err := oc.FetchNoWait(100); err == nil {
			for m := range batch.Messages() {
				md, _ := m.Metadata()
				t.Logf("input seq %d at %s: %s %.200s", md.Sequence.Stream, md.Timestamp.Format(time.StampMicro), m.Subject(), m.Data())
			}
		}
	}
	var consumers []struct{ stream, name string }
	if s, err := e.f.JS.Stream(ctx, e.names.InputStream()); err == nil {
		for name := range s.ConsumerNames(ctx).Name() {
			if e.names.IsDispatcherConsumer(name) {
				consumers = append(consumers, struct{ stream, name string }{e.names.InputStream(), name})
			}
		}
	}
	for name := range e.tasks.handlers() {
		consumers = append(consumers, struct{ stream, name string }{e.names.TaskStream(), e.names.TaskConsumer(name, "1")})
	}
	for _, c := range consumers {
		cons, err := e.f.JS.Consumer(ctx, c.stream, c.name)
		if err != nil {
			t.Logf("consumer %s: %v", c.name, err)
			continue
		}
		info, err := cons.Info(ctx)
		if err != nil {
			t.Logf("consumer %s: %v", c.name, err)
			continue
		}
		t.Logf("consumer %s: pending %d, ack pending %d, redelivered %d, waiting %d, delivered %+v, ack floor %+v",
			c.name, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.Delivered, info.AckFloor)
	}
	for _, inv := range e.tasks.invocations(runID) {
		t.Logf("task attempt: %s node %s attempt %d delivery %d", inv.Activation, inv.Node, inv.Attempt, inv.Delivery)
	}
}
