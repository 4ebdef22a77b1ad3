package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// TestReplayRebuildsRealRuns runs real workflows to their end and checks
// that replaying each history rebuilds the saved record byte for byte,
// and that Restore brings a lost record back equal.
func TestReplayRebuildsRealRuns(t *testing.T) {
	b := setup(t, provision.ProvisionOptions{}, 1, 0)
	cases := []struct {
		name, wf string
		input    any
		// drive runs after the start (before for early).
		drive  func(t *testing.T, id string)
		early  func(t *testing.T, id string)
		status string
		result string
	}{
		{name: "one task", wf: "one", input: 7, status: wire.StatusDone, result: "14"},
		{name: "fan-out", wf: "fanout", input: 3, status: wire.StatusDone, result: `{"a":6,"b":6,"c":9,"d":9}`},
		{
			name: "wait for event", wf: "event", input: nil, status: wire.StatusDone, result: "10",
			drive: func(t *testing.T, id string) { b.send(t, id, "go", map[string]any{"n": 5}) },
		},
		{name: "timer", wf: "timer", input: 4, status: wire.StatusDone, result: "8"},
		{
			name: "catch", wf: "catch", input: 1, status: wire.StatusDone,
			result: `{"error":{"code":"JF2006","message":"JF2006: node 'task' failed: out of stock at /nodes/task","nodeId":"task"}}`,
		},
		{name: "retries", wf: "retry", input: 1, status: wire.StatusDone, result: `{"attempt":3}`},
		{
			name: "cancel", wf: "event", input: nil, status: wire.StatusCancelled,
			drive: func(t *testing.T, id string) {
				b.waitFor(t, id, wire.StatusWaiting)
				if err := b.f.Client.Cancel(b.ctx, id, "changed my mind"); err != nil {
					t.Fatal(err)
				}
			},
		},
		// An event before its run's start is terminated, not applied.
		{
			name: "event before start", wf: "event", input: nil, status: wire.StatusDone, result: "6",
			early: func(t *testing.T, id string) { b.send(t, id, "go", map[string]any{"n": 100}) },
			drive: func(t *testing.T, id string) {
				b.waitFor(t, id, wire.StatusWaiting)
				b.send(t, id, "go", map[string]any{"n": 3})
			},
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := fmt.Sprintf("run-%d", i)
			if c.early != nil {
				c.early(t, id)
			}
			if err := b.f.Client.StartRun(b.ctx, c.wf, id, c.input); err != nil {
				t.Fatal(err)
			}
			if c.drive != nil {
				c.drive(t, id)
			}
			st := b.wait(t, id)
			if st.Status != c.status || (c.result != "" && string(st.Result) != c.result) {
				t.Fatalf("run ended %s with %s, want %s with %s (error %+v)", st.Status, st.Result, c.status, c.result, st.Error)
			}
			// An input after the end is rejected and recorded: replay too.
			b.send(t, id, "late", nil)
			natstest.WaitFor(t, bound, "late event recorded", func() error {
				rec, err := runrecord.Decode(b.record(t, id))
				if err != nil {
					return err
				}
				if n := len(rec.Rejected); n == 0 || rec.Rejected[n-1].Kind != "event" {
					return fmt.Errorf("rejections %+v", rec.Rejected)
				}
				return nil
			})
			b.settled(t)

			rep := b.checkEqual(t, id)
			t.Logf("order %v, skipped %v, notes %v", rep.Info.Record.Order, rep.Info.Skipped, rep.Info.Notes)
			if rep.Info.Order != replay.OrderRecord || rep.Info.Applied == 0 || rep.Info.Rejected == 0 {
				t.Errorf("info %+v", rep.Info)
			}
			st2, info, err := replay.Rebuild(b.ctx, b.src, id)
			if err != nil || string(st2.Status) != c.status || info.Messages != rep.Info.Messages {
				t.Fatalf("rebuild: %v, status %v, info %+v", err, st2, info)
			}

			saved := b.record(t, id)
			b.deleteRecord(t, id)
			if _, err := replay.Check(b.ctx, b.src, id); !errors.Is(err, replay.ErrNoRecord) {
				t.Fatalf("check without a record: %v, want ErrNoRecord", err)
			}
			res, err := replay.Restore(b.ctx, b.src, id)
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if res.Action != replay.ActionCreated || res.Info.Order != replay.OrderStream {
				t.Errorf("restore did %q in %s order, want created in stream order", res.Action, res.Info.Order)
			}
			if restored := b.record(t, id); !bytes.Equal(restored, saved) {
				p, x, y := replay.Diverge(saved, restored)
				t.Fatalf("restored record differs at %q: saved %s, restored %s", p, x, y)
			}
			if res, err := replay.Restore(b.ctx, b.src, id); err != nil || res.Action != replay.ActionUnchanged {
				t.Fatalf("second restore: %v, %q", err, res.Action)
			}
			b.checkEqual(t, id)
		})
	}
}

// TestReplayFollowsCompetingDispatchers runs workflows under three
// dispatchers, which conflict on each run's record and apply some inputs
// late: fan-outs, and runs that two events race to end. The record's
// order lets replay rebuild every state all the same.
func TestReplayFollowsCompetingDispatchers(t *testing.T) {
	// Records that keep only 2 applied inputs make the replay rely on
	// the order's spans for all but the last two.
	b := setup(t, provision.ProvisionOptions{}, 3, 2)
	const runs = 8
	var ids []string
	for i := range runs {
		id := fmt.Sprintf("fan-%d", i)
		if err := b.f.Client.StartRun(b.ctx, "fanout", id, i); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := range runs {
		id := fmt.Sprintf("race-%d", i)
		if err := b.f.Client.StartRun(b.ctx, "either", id, nil); err != nil {
			t.Fatal(err)
		}
		b.send(t, id, "a", nil)
		b.send(t, id, "b", nil)
		ids = append(ids, id)
	}
	reordered, differ := 0, 0
	for _, id := range ids {
		if st := b.wait(t, id); st.Status != wire.StatusDone {
			t.Fatalf("%s ended %s", id, st.Status)
		}
	}
	b.settled(t)
	for _, id := range ids {
		rep := b.checkEqual(t, id)
		if len(rep.Info.Record.Order) > 1 {
			reordered++
			t.Logf("%s: order %v", id, rep.Info.Record.Order)
		}
		// Without the record's order a replay takes stream order, which
		// a late input can change.
		byStream := b.src
		byStream.Runs = nil
		st, info, err := replay.Rebuild(b.ctx, byStream, id)
		if err != nil || info.Order != replay.OrderStream {
			t.Fatalf("rebuild in stream order: %v, %+v", err, info)
		}
		if data, _ := run.Encode(st); !bytes.Equal(data, rep.Saved) {
			differ++
		}
	}
	t.Logf("%d of %d runs had inputs applied out of stream order; %d would rebuild differently in stream order", reordered, len(ids), differ)
}

// TestTrimmedHistoryIsRefused removes parts of finished runs' histories
// and expects ErrHistoryTrimmed naming what is gone, never a state.
func TestTrimmedHistoryIsRefused(t *testing.T) {
	b := setup(t, provision.ProvisionOptions{ErasableHistory: true}, 1, 0)
	// Before anything is removed from the stream: a run that never
	// started, and one that never was.
	b.send(t, "ghost", "go", nil)
	if _, _, err := replay.Rebuild(b.ctx, b.src, "ghost"); !errors.Is(err, replay.ErrNotStarted) {
		t.Errorf("rebuild of a run with an event and no start: %v, want ErrNotStarted", err)
	}
	if _, _, err := replay.Rebuild(b.ctx, b.src, "nobody"); !errors.Is(err, replay.ErrNoHistory) {
		t.Errorf("rebuild of an unknown run: %v, want ErrNoHistory", err)
	}
	for _, id := range []string{"lost-start", "lost-result"} {
		if err := b.f.Client.StartRun(b.ctx, "fanout", id, 2); err != nil {
			t.Fatal(err)
		}
		b.wait(t, id)
	}
	stream := b.inputStream(t)

	for _, subject := range b.f.Names.StoredStarts("lost-start", provision.Partitions(stream.CachedInfo().Config)) {
		if err := stream.Purge(b.ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := replay.Check(b.ctx, b.src, "lost-start")
	var te *replay.TrimmedError
	if !errors.Is(err, replay.ErrHistoryTrimmed) || !errors.As(err, &te) || !strings.Contains(err.Error(), "start") {
		t.Fatalf("check after the start was purged: %v", err)
	}
	if te.StreamFirst == 0 {
		t.Errorf("trimmed error without the stream's state: %+v", te)
	}
	if _, err := replay.Restore(b.ctx, b.src, "lost-start"); !errors.Is(err, replay.ErrHistoryTrimmed) {
		t.Errorf("restore after the start was purged: %v", err)
	}
	b.deleteRecord(t, "lost-start")
	if _, err := replay.Restore(b.ctx, b.src, "lost-start"); !errors.Is(err, replay.ErrHistoryTrimmed) {
		t.Errorf("restore without record or start: %v", err)
	}

	msgs, err := replay.ReadHistory(b.ctx, b.f.JS, b.f.Names, "lost-result")
	if err != nil {
		t.Fatal(err)
	}
	var gone uint64
	for _, m := range msgs {
		if strings.HasSuffix(m.Subject, ".result") {
			gone = m.Seq
			break
		}
	}
	if err := stream.DeleteMsg(b.ctx, gone); err != nil {
		t.Fatal(err)
	}
	_, err = replay.Check(b.ctx, b.src, "lost-result")
	if !errors.Is(err, replay.ErrHistoryTrimmed) || !strings.Contains(err.Error(), fmt.Sprintf("seq %d", gone)) {
		t.Fatalf("check after result %d was deleted: %v", gone, err)
	}
	t.Log(err)
}

// TestRetentionTrimsHistory keeps history for one second: a run whose
// start expired before its end can no longer be replayed, and says so.
func TestRetentionTrimsHistory(t *testing.T) {
	b := setup(t, provision.ProvisionOptions{MaxAge: time.Second}, 1, 0)
	const id = "old"
	if err := b.f.Client.StartRun(b.ctx, "event", id, nil); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, id, wire.StatusWaiting)
	natstest.WaitFor(t, bound, "start expired", func() error {
		msgs, err := replay.ReadHistory(b.ctx, b.f.JS, b.f.Names, id)
		if err != nil {
			return err
		}
		if len(msgs) > 0 {
			return fmt.Errorf("%d messages kept", len(msgs))
		}
		return nil
	})
	t.Log("start expired")
	b.send(t, id, "go", map[string]any{"n": 1})
	st, err := b.f.Client.Wait(b.ctx, id)
	t.Log("done", st, err)
	if st := b.wait(t, id); st.Status != wire.StatusDone {
		t.Fatalf("run ended %s", st.Status)
	}
	_, err = replay.Check(b.ctx, b.src, id)
	var te *replay.TrimmedError
	if !errors.As(err, &te) || te.MaxAge != time.Second || !strings.Contains(err.Error(), "start (seq") {
		t.Fatalf("check after the start expired: %v", err)
	}
	t.Log(err)
}

func (b *bundle) send(t *testing.T, id, eventType string, payload any) {
	t.Helper()
	if err := b.f.Client.SendEvent(b.ctx, id, eventType, payload); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) waitFor(t *testing.T, id, status string) {
	t.Helper()
	natstest.WaitFor(t, bound, id+" "+status, func() error {
		st, err := b.f.Client.Status(b.ctx, id)
		if err != nil {
			return err
		}
		if st.Status != status {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
}
