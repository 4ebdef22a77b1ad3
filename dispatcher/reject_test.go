package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// staleStore is a RunStore that, once armed, serves one read of a run
// from the first record ever written for it, with that record's
// revision: the read of a replica that missed every later write.
type staleStore struct {
	RunStore
	mu     sync.Mutex
	first  map[string]staleVersion
	armed  string
	served atomic.Int32 // stale reads served
	lost   atomic.Int32 // updates refused as stale
}

type staleVersion struct {
	data []byte
	rev  uint64
}

func (s *staleStore) arm(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = runID
}

func (s *staleStore) Get(ctx context.Context, runID string, opts ...kvstore.ReadOption) ([]byte, uint64, error) {
	s.mu.Lock()
	v, ok := s.first[runID]
	if ok && s.armed == runID {
		s.armed = ""
		s.mu.Unlock()
		s.served.Add(1)
		return v.data, v.rev, nil
	}
	s.mu.Unlock()
	return s.RunStore.Get(ctx, runID, opts...)
}

func (s *staleStore) Create(ctx context.Context, runID string, data []byte) (uint64, error) {
	rev, err := s.RunStore.Create(ctx, runID, data)
	if err == nil {
		s.mu.Lock()
		s.first[runID] = staleVersion{data: data, rev: rev}
		s.mu.Unlock()
	}
	return rev, err
}

func (s *staleStore) Update(ctx context.Context, runID string, data []byte, rev uint64) (uint64, error) {
	next, err := s.RunStore.Update(ctx, runID, data, rev)
	if errors.Is(err, kvstore.ErrStale) {
		s.lost.Add(1)
	}
	return next, err
}

// logRecord is one captured log line with its attributes.
type logRecord struct {
	msg   string
	attrs map[string]string
}

// captureLog keeps every record, with the attributes added by With.
type captureLog struct {
	mu    *sync.Mutex
	recs  *[]logRecord
	attrs []slog.Attr
}

func newCaptureLog() captureLog { return captureLog{mu: &sync.Mutex{}, recs: &[]logRecord{}} }

func (c captureLog) Enabled(context.Context, slog.Level) bool { return true }
func (c captureLog) WithGroup(string) slog.Handler            { return c }
func (c captureLog) WithAttrs(as []slog.Attr) slog.Handler {
	c.attrs = append(append([]slog.Attr{}, c.attrs...), as...)
	return c
}

func (c captureLog) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	*c.recs = append(*c.recs, rec)
	c.mu.Unlock()
	return nil
}

func (c captureLog) records() []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]logRecord(nil), *c.recs...)
}

// twoSteps runs echo@1 twice in a row.
const twoSteps = `{
  "$workflow": "0.2",
  "revision": "two/1",
  "initial": "a",
  "states": {
    "a": {"work": {"task": "echo", "version": "1"}, "then": "b"},
    "b": {"work": {"task": "echo", "version": "1"}, "then": "done"},
    "done": {"final": true}
  }
}`

// TestRejectionLoggedOnlyWhenItStands makes a dispatcher refuse an input
// on a stale record: the result of a run's second task, read against the
// record from before the first task's result. Saving that rejection loses
// the compare-and-swap, the input is applied on the fresh record and
// settles the run. The log must say the run settled, and never that the
// same input was rejected.
func TestRejectionLoggedOnlyWhenItStands(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"two": twoSteps}, registry.TaskRef{Task: "echo", Version: "1"})
	store := &staleStore{RunStore: b.store, first: map[string]staleVersion{}}
	logs := newCaptureLog()
	d, err := New(b.js, store, b.reg, Config{
		Logger:    slog.New(logs),
		CacheSize: -1, // every step reads the store, so the stale read is used
	})
	if err != nil {
		t.Fatal(err)
	}
	running(t, d)
	b.serveTask(t, "echo", "1", func(ctx context.Context, inv worker.Invocation) (any, error) {
		if inv.State == "/states/b" {
			// The next read of the run, this result's step, is stale.
			store.arm(inv.Run)
		}
		return echoUpper(ctx, inv)
	})
	b.publish(t, b.names.Start("r"), wire.Start{Workflow: "two", Input: json.RawMessage(`"p"`)}, "start/r")
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range logs.records() {
				t.Logf("%s %v", r.msg, r.attrs)
			}
		}
	})
	rec := b.waitStatus(t, "r", wire.StatusDone, 20*time.Second)
	if got, want := string(rec.Status.Result), `{"attempt":1,"echo":{"attempt":1,"echo":"p"}}`; got != want {
		t.Fatalf("result %s, want %s", got, want)
	}
	if store.served.Load() != 1 || store.lost.Load() == 0 {
		t.Fatalf("stale reads %d, lost updates %d: the race this test needs did not happen", store.served.Load(), store.lost.Load())
	}
	if len(rec.Rejected) != 0 {
		t.Errorf("rejections recorded %+v, want none", rec.Rejected)
	}
	// The record is saved, and seen done, before the step logs the
	// settlement: wait for the line.
	settled := ""
	natstest.WaitFor(t, 10*time.Second, "the run settled line", func() error {
		for _, r := range logs.records() {
			if r.msg == "dispatcher: run settled" && r.attrs["run_id"] == "r" {
				settled = r.attrs["stream_seq"]
			}
		}
		if settled == "" {
			return errors.New("no run settled line")
		}
		return nil
	})
	for _, r := range logs.records() {
		if r.msg == "dispatcher: input rejected" && r.attrs["stream_seq"] == settled {
			t.Errorf("input %s logged as rejected (%s) and then settled the run", settled, r.attrs["reason"])
		}
	}
	// A rejection that stands is still logged, once it is saved.
	b.publish(t, b.names.Cancel("r"), wire.Cancel{Reason: "too late"}, "")
	natstest.WaitFor(t, 10*time.Second, "the cancel of a settled run logged as rejected", func() error {
		for _, r := range logs.records() {
			if r.msg == "dispatcher: input rejected" && r.attrs["kind"] == "cancel" {
				if rec := b.record(t, "r"); len(rec.Rejected) != 1 {
					return fmt.Errorf("logged before it was saved: %d rejections recorded", len(rec.Rejected))
				}
				return nil
			}
		}
		return errors.New("not logged")
	})
}
