package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// publishStart publishes a raw start message, as any NATS client may
// (docs/PROTOCOL.md), without the Go client.
func (e *env) publishStart(t *testing.T, runID string, body wire.Start) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.JS.Publish(e.ctx, e.names.Start(runID), data); err != nil {
		t.Fatal(err)
	}
}

// decision waits for the decision on runID's start to be want.
func (e *env) decision(t *testing.T, runID, want string) wire.StartDecision {
	t.Helper()
	var d wire.StartDecision
	natstest.WaitFor(t, time.Minute, "decision "+want+" on "+runID, func() error {
		var ok bool
		var err error
		if d, ok, err = e.f.Client.StartDecision(e.ctx, runID); err != nil {
			return err
		} else if !ok || d.Outcome != want {
			return fmt.Errorf("decision %+v (kept: %v)", d, ok)
		}
		return nil
	})
	return d
}

// noRecord checks runID has no record.
func (e *env) noRecord(t *testing.T, runID string) {
	t.Helper()
	if _, err := e.f.Client.Status(e.ctx, runID); !errors.Is(err, client.ErrRunNotFound) {
		t.Fatalf("run %s: status error %v, want none (no record)", runID, err)
	}
}

func TestIdempotencyKeyOnARawStart(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.publishStart(t, "idem-1", wire.Start{Workflow: "forever", IdempotencyKey: "order-7"})
	e.waitStatus(t, "idem-1", wire.StatusWaiting, time.Minute)
	e.publishStart(t, "idem-2", wire.Start{Workflow: "forever", IdempotencyKey: "order-7"})
	d := e.decision(t, "idem-2", wire.StartOutcomeDuplicate)
	if d.Run != "idem-1" || d.Key != "order-7" {
		t.Fatalf("decision %+v: want the first run idem-1 and key order-7", d)
	}
	e.noRecord(t, "idem-2")
	// The client answers with the first run.
	out, err := e.f.Client.StartDecided(e.ctx, "forever", "idem-3", nil, client.WithIdempotencyKey("order-7"))
	if err != nil || out.Run != "idem-1" || out.Started() {
		t.Fatalf("StartDecided = %+v, %v; want a duplicate answered with idem-1", out, err)
	}
	e.noRecord(t, "idem-3")
}

func TestSingletonRefusesWhileItsRunIsActive(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.publishStart(t, "one-1", wire.Start{Workflow: "forever", Singleton: &wire.Singleton{Key: "acct-1"}})
	e.waitStatus(t, "one-1", wire.StatusWaiting, time.Minute)
	_, err := e.f.Client.StartDecided(e.ctx, "forever", "one-2", nil, client.WithSingleton("acct-1", ""))
	if !errors.Is(err, client.ErrStartRefused) {
		t.Fatalf("second start: %v, want a refusal", err)
	}
	d := e.decision(t, "one-2", wire.StartOutcomeRefused)
	if d.Run != "one-1" || d.Key != "acct-1" {
		t.Fatalf("decision %+v: want the active run one-1 and key acct-1", d)
	}
	e.noRecord(t, "one-2")
	// Another key is free; once one-1 settles, acct-1 is too.
	e.publishStart(t, "two-1", wire.Start{Workflow: "forever", Singleton: &wire.Singleton{Key: "acct-2"}})
	e.waitStatus(t, "two-1", wire.StatusWaiting, time.Minute)
	if err := e.f.Client.SendEvent(e.ctx, "one-1", "never", nil); err != nil {
		t.Fatal(err)
	}
	e.wait(t, "one-1", time.Minute)
	out, err := e.f.Client.StartDecided(e.ctx, "forever", "one-3", nil, client.WithSingleton("acct-1", ""))
	if err != nil || !out.Started() {
		t.Fatalf("start after the holder settled = %+v, %v; want started", out, err)
	}
}

func TestSingletonQueueStartsWhenTheActiveRunSettlesAcrossADispatcherChange(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.publishStart(t, "q-1", wire.Start{Workflow: "forever", Singleton: &wire.Singleton{Key: "acct", Mode: wire.SingletonQueue}})
	e.waitStatus(t, "q-1", wire.StatusWaiting, time.Minute)
	e.publishStart(t, "q-2", wire.Start{Workflow: "forever", Singleton: &wire.Singleton{Key: "acct", Mode: wire.SingletonQueue}})
	if d := e.decision(t, "q-2", wire.StartOutcomeQueued); d.Run != "q-1" {
		t.Fatalf("decision %+v: want queued behind q-1", d)
	}
	e.noRecord(t, "q-2")
	// The dispatcher that queued it is replaced while q-1 is active: the
	// queued start is the server's to keep, and looks again (1 s, then
	// 2 s, …) with whichever dispatcher runs.
	stopWithin(t, "dispatcher", e.dispatchers[0].Stop)
	e.addDispatcher(dispatcher.Config{})
	if err := e.f.Client.SendEvent(e.ctx, "q-1", "never", nil); err != nil {
		t.Fatal(err)
	}
	e.wait(t, "q-1", time.Minute)
	e.waitStatus(t, "q-2", wire.StatusWaiting, time.Minute)
	if _, ok, err := e.f.Client.StartDecision(e.ctx, "q-2"); err != nil || ok {
		t.Fatalf("decision on q-2 once started: kept %v, %v; want none", ok, err)
	}
	// Its history holds the queued start and the looks that found q-1
	// active: replay follows the one that started it.
	checkReplay(t, e, "q-2")
}

func TestDebounceRunsTheLastStartOfABurstAcrossADispatcherChange(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	stopWithin(t, "dispatcher", e.dispatchers[0].Stop)
	burst := []string{"deb-1", "deb-2", "deb-3"}
	var last time.Time
	for _, id := range burst {
		last = time.Now()
		e.publishStart(t, id, wire.Start{Workflow: "forever", Debounce: &wire.Debounce{Key: "doc-9", Ms: 1500}})
	}
	// The dispatcher that holds the burst is replaced before it fires.
	d1 := e.addDispatcher(dispatcher.Config{})
	e.decision(t, "deb-3", wire.StartOutcomeDebounced)
	stopWithin(t, "dispatcher", d1.Stop)
	e.addDispatcher(dispatcher.Config{})
	e.waitStatus(t, "deb-3", wire.StatusWaiting, time.Minute)
	for _, id := range burst[:2] {
		e.noRecord(t, id)
		e.decision(t, id, wire.StartOutcomeReplaced)
	}
	checkReplay(t, e, "deb-3")
	// The run started D after the last start of the burst.
	if started := e.record(t, "deb-3").Status.Time; started < float64(last.UnixMilli())+1500 {
		t.Fatalf("deb-3 started at %v, less than 1.5 s after its start at %v", started, last.UnixMilli())
	}
}
