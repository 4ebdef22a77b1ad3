package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// resetDoc runs one, then two, then ends with two's output.
const (
	resetDoc = `{"$workflow":"0.2","revision":"rs/1","initial":"one","states":{
	 "one":{"work":{"task":"rs-one","version":"1"},"then":"two"},
	 "two":{"work":{"task":"rs-two","version":"1"},"then":"done"},
	 "done":{"final":true}}}`
	resetPolicy = `{"*":{"attemptTimeout":"20s","maxAttempts":1}}`
)

// serveReset answers one with "ONE" and two with "TWO-n", n counting
// two's invocations.
func (e *env) serveReset(t *testing.T) *rawTasks {
	t.Helper()
	log := &rawTasks{calls: map[string][]wire.Invocation{}}
	var twos atomic.Int32
	e.serveRaw(t, log, "rs-one", func(wire.Invocation) map[string]any { return map[string]any{"output": "ONE"} })
	e.serveRaw(t, log, "rs-two", func(wire.Invocation) map[string]any {
		return map[string]any{"output": fmt.Sprintf("TWO-%d", twos.Add(1))}
	})
	return log
}

func (e *env) replaySource() replay.Source {
	cfg := dispatcherConfig(e.opts.dispatcher)
	return replay.Source{JS: e.f.JS, Names: e.names, Registry: e.f.Registry, Runs: e.f.Runs, Settings: cfg.Settings(), RunOptions: cfg.RunOptions}
}

// annotated is the run's history with its verdicts, by sequence.
func (e *env) annotated(t *testing.T, runID string) []replay.Annotated {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	msgs, _, err := replay.Annotate(ctx, e.replaySource(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// resetTo resets the run and waits until a dispatcher took the reset.
func (e *env) resetTo(t *testing.T, runID string, to uint64) (*wire.Status, error) {
	t.Helper()
	seq, err := e.f.Client.Reset(e.ctx, runID, to, "rerun", "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	return e.f.Client.Resetted(ctx, runID, seq)
}

// A done run reset to the input after which it entered its second state
// runs that state's task again, above its earlier attempt, and ends with
// the new output; the inputs after the point are superseded, a late
// result of the superseded attempt is refused, and a replay rebuilds the
// run exactly.
func TestResetRerunsARunFromAnEarlierInput(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rs", resetDoc, resetPolicy)
	log := e.serveReset(t)
	e.start(t, "rs", "rs1", 1)
	if st := e.wait(t, "rs1", 30*time.Second); st.Status != wire.StatusDone || string(st.Result) != `"TWO-1"` {
		t.Fatalf("run ended %+v, want done with TWO-1", st)
	}
	to, err := replay.Entry(e.ctx, e.replaySource(), "rs1", "two", 0)
	if err != nil {
		t.Fatal(err)
	}
	before := e.annotated(t, "rs1")
	if len(before) != 3 || before[1].Seq != to {
		t.Fatalf("history %+v: want start, one's result (the entry into two, got seq %d), two's result", before, to)
	}

	st, err := e.resetTo(t, "rs1", to)
	if err != nil {
		t.Fatal(err)
	}
	if (st.Status != wire.StatusRunning || st.State != "/states/two") && st.Status != wire.StatusDone {
		t.Fatalf("after the reset: %+v, want running in two (or done already)", st)
	}
	if st := e.wait(t, "rs1", 30*time.Second); st.Status != wire.StatusDone || string(st.Result) != `"TWO-2"` {
		t.Fatalf("reset run ended %+v, want done with TWO-2", st)
	}
	all, twos := log.of("task"), []wire.Invocation(nil)
	for _, inv := range all {
		if inv.Task == "rs-two" {
			twos = append(twos, inv)
		}
	}
	if len(twos) != 2 || len(all) != 3 || twos[1].Attempt <= twos[0].Attempt {
		t.Fatalf("invocations %+v: want one once and two twice, the second above the first", all)
	}

	// The superseded attempt's result, with its valid token, is refused.
	e.result(t, twos[0], map[string]any{"output": "late"})
	e.consumerSettled(t, 15*time.Second)
	rec := e.checkRecord(t, "rs1", 1)
	if r := rec.Rejected[0]; !strings.Contains(r.Reason, "is done") {
		t.Errorf("late result refused with %q, want a refusal of a settled run", r.Reason)
	}
	s, err := step.DecodeState(rec)
	if err != nil || s.Resets != 1 {
		t.Fatalf("state %+v, %v: want one reset", s, err)
	}

	after := e.annotated(t, "rs1")
	verdicts := map[uint64]replay.Annotated{}
	for _, m := range after {
		verdicts[m.Seq] = m
	}
	if v := verdicts[before[2].Seq]; v.Verdict != replay.VerdictSuperseded || !strings.Contains(v.Reason, fmt.Sprintf("took the run back to its state after seq %d", to)) {
		t.Errorf("two's first result: %s %q, want superseded by the reset", v.Verdict, v.Reason)
	}
	if v := verdicts[before[1].Seq]; v.Verdict != replay.VerdictApplied {
		t.Errorf("one's result: %s, want applied", v.Verdict)
	}
	checkReplay(t, e, "rs1")

	// Points the run cannot go back to are refused, with the reason.
	e.start(t, "rs", "other", 1)
	e.wait(t, "other", 30*time.Second)
	for _, c := range []struct {
		to   uint64
		want string
	}{
		{after[len(after)-1].Seq, "is the latest input"},
		{before[2].Seq, "was superseded by the reset"},
		{e.annotated(t, "other")[0].Seq, "is not an input run"},
		{lastApplied(after), "had already finished (done) at that point"},
	} {
		if _, err := e.resetTo(t, "rs1", c.to); !errors.Is(err, client.ErrResetRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reset to %d: %v, want a refusal saying %q", c.to, err, c.want)
		}
	}
	if st := e.wait(t, "rs1", 30*time.Second); st.Status != wire.StatusDone || string(st.Result) != `"TWO-2"` {
		t.Fatalf("after the refused resets: %+v", st)
	}
	checkReplay(t, e, "rs1")
}

// Back to the start: the run's first state runs again, and a second
// reset goes back along the line the first one left.
func TestResetTwiceFollowsTheLine(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rs", resetDoc, resetPolicy)
	log := e.serveReset(t)
	e.start(t, "rs", "rs2", 1)
	e.wait(t, "rs2", 30*time.Second)
	start := e.annotated(t, "rs2")[0].Seq
	if _, err := e.resetTo(t, "rs2", start); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "rs2", 30*time.Second); string(st.Result) != `"TWO-2"` {
		t.Fatalf("after the first reset: %+v", st)
	}
	to, err := replay.Entry(e.ctx, e.replaySource(), "rs2", "two", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.resetTo(t, "rs2", to); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "rs2", 30*time.Second); string(st.Result) != `"TWO-3"` {
		t.Fatalf("after the second reset: %+v", st)
	}
	if n := len(log.of("task")); n != 5 {
		t.Errorf("%d invocations, want 5 (one twice, two three times)", n)
	}
	superseded := 0
	for _, m := range e.annotated(t, "rs2") {
		if m.Verdict == replay.VerdictSuperseded {
			superseded++
		}
	}
	if superseded != 3 {
		t.Errorf("%d inputs superseded, want 3 (the first line's two results, then the second line's two's result)", superseded)
	}
	checkReplay(t, e, "rs2")
}

// A dispatcher process killed in the middle of a reset (after it rebuilt
// the run's earlier state, or after it saved the reset record) leaves the
// reset to another, which applies it once: two's task runs once more.
func TestResetSurvivesADispatcherKill(t *testing.T) {
	t.Parallel()
	for _, point := range []string{dispatcher.CrashAfterRewind, dispatcher.CrashAfterSave} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{dispatchers: none, workers: none})
			e.deployWith(t, "rs", resetDoc, resetPolicy)
			log := e.serveReset(t)
			p := e.spawnDispatcher(t, point+"/"+subjects.KindReset, crashAckWait)
			e.start(t, "rs", "rk", 1)
			if st := e.wait(t, "rk", 30*time.Second); st.Status != wire.StatusDone {
				t.Fatalf("run ended %+v, want done", st)
			}
			to, err := replay.Entry(e.ctx, e.replaySource(), "rk", "two", 0)
			if err != nil {
				t.Fatal(err)
			}
			seq, err := e.f.Client.Reset(e.ctx, "rk", to, "after a kill", "")
			if err != nil {
				t.Fatal(err)
			}
			if line, want := p.next(t, 30*time.Second), fmt.Sprintf("crash %s %s rk", point, subjects.KindReset); line != want {
				t.Fatalf("dispatcher process said %q, want %q", line, want)
			}
			p.waitKilled(t)

			e.addDispatcher(dispatcher.Config{AckWait: crashAckWait})
			ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
			defer cancel()
			if _, err := e.f.Client.Resetted(ctx, "rk", seq); err != nil {
				t.Fatal(err)
			}
			if st := e.wait(t, "rk", 30*time.Second); st.Status != wire.StatusDone || string(st.Result) != `"TWO-2"` {
				t.Fatalf("reset run ended %+v, want done with TWO-2", st)
			}
			e.consumerSettled(t, 15*time.Second)
			if got := e.lastSeq(t, e.names.TaskStream()); got != 3 {
				t.Errorf("%d invocations stored, want 3 (one, two, two again)", got)
			}
			if n := len(log.of("task")); n != 3 {
				t.Errorf("%d invocations served, want 3", n)
			}
			// The killed process saved the reset: its redelivery is
			// recognised as applied (more than once if a step outlasted
			// the short AckWait on a loaded machine).
			if got := e.messages(t, subjects.KindReset, "duplicate"); point == dispatcher.CrashAfterSave && got < 1 {
				t.Errorf("%v redelivered resets recognised as applied, want at least 1", got)
			}
			rec := e.checkRecord(t, "rk", 0)
			if s, err := step.DecodeState(rec); err != nil || s.Resets != 1 {
				t.Errorf("resets %+v, %v; want 1", s, err)
			}
			checkReplay(t, e, "rk")
		})
	}
}

// lastApplied is the sequence of the last input of msgs the run applied.
func lastApplied(msgs []replay.Annotated) uint64 {
	var seq uint64
	for _, m := range msgs {
		if m.Verdict == replay.VerdictApplied {
			seq = m.Seq
		}
	}
	return seq
}

// resetWaitDoc waits for "go" after its task, for at most 5 s.
const resetWaitDoc = `{"$workflow":"0.2","revision":"rw/1","initial":"one","states":{
 "one":{"work":{"task":"rs-one","version":"1"},"then":"w"},
 "w":{"on":[{"event":"go","to":"done"}],"after":{"ms":5000,"to":"late"}},
 "done":{"final":true},"late":{"final":true}}}`

// A run that settled done had its timers purged; reset back into its
// wait, the wait's timer is armed again (a new schedule, not dropped as a
// duplicate of the first) and takes the run out of the wait.
func TestResetIntoAWaitArmsItsTimerAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rw", resetWaitDoc, resetPolicy)
	e.serveRaw(t, &rawTasks{calls: map[string][]wire.Invocation{}}, "rs-one", func(wire.Invocation) map[string]any { return map[string]any{"output": "ONE"} })
	e.start(t, "rw", "rw1", 1)
	e.waitStatus(t, "rw1", wire.StatusWaiting, 30*time.Second)
	if err := e.f.Client.SendEvent(e.ctx, "rw1", "go", nil); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "rw1", 30*time.Second); st.Status != wire.StatusDone || st.State != "/states/done" {
		t.Fatalf("run ended %+v, want done in done", st)
	}
	to, err := replay.Entry(e.ctx, e.replaySource(), "rw1", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.resetTo(t, "rw1", to); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, "rw1", 30*time.Second); st.Status != wire.StatusDone || st.State != "/states/late" {
		t.Fatalf("reset run ended %+v, want done in late (its wait's timer fired)", st)
	}
	checkReplay(t, e, "rw1")
}

// A run whose history lost inputs (here its start, purged) cannot be
// rebuilt: its reset is refused, saying what is gone, and the run stays
// as it was.
func TestResetRefusesATrimmedHistory(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	e.deployWith(t, "rs", resetDoc, resetPolicy)
	e.serveReset(t)
	e.start(t, "rs", "rt", 1)
	e.wait(t, "rt", 30*time.Second)
	to, err := replay.Entry(e.ctx, e.replaySource(), "rt", "two", 0)
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range e.names.StoredStarts("rt", provision.Partitions(inputs.CachedInfo().Config)) {
		if err := inputs.Purge(e.ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.resetTo(t, "rt", to); !errors.Is(err, client.ErrResetRefused) || !strings.Contains(err.Error(), `the history of run "rt" is trimmed: its start (seq 1) is gone`) {
		t.Fatalf("reset of a trimmed run: %v, want a refusal naming the missing start", err)
	}
	if st := e.wait(t, "rt", 30*time.Second); st.Status != wire.StatusDone || string(st.Result) != `"TWO-1"` {
		t.Fatalf("after the refused reset: %+v, want done as before", st)
	}
}

// A settled run's removal stays scheduled when it is reset; when it fires
// the run is no longer settled, so retention refuses it and keeps the run.
// The run's next settlement is removed as usual.
func TestResetKeepsASettledRunFromItsRemoval(t *testing.T) {
	t.Parallel()
	e := setup(t, options{workers: none})
	doc := strings.Replace(resetWaitDoc, `"ms":5000`, `"ms":600000`, 1)
	e.deployWith(t, "rw", doc, `{"*":{"attemptTimeout":"20s","maxAttempts":1},"$run":{"retention":"2s"}}`)
	e.serveRaw(t, &rawTasks{calls: map[string][]wire.Invocation{}}, "rs-one", func(wire.Invocation) map[string]any { return map[string]any{"output": "ONE"} })
	e.start(t, "rw", "kept", 1)
	e.waitStatus(t, "kept", wire.StatusWaiting, 30*time.Second)
	if err := e.f.Client.SendEvent(e.ctx, "kept", "go", nil); err != nil {
		t.Fatal(err)
	}
	e.wait(t, "kept", 30*time.Second)
	to, err := replay.Entry(e.ctx, e.replaySource(), "kept", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.resetTo(t, "kept", to); err != nil || st.Status != wire.StatusWaiting {
		t.Fatalf("after the reset: %+v, %v; want waiting", st, err)
	}
	// Removals are carried out by buckets (dispatcher/reaper.go): once the
	// bucket of the first settlement is done, the reset run must be there.
	reaper, err := e.f.JS.Consumer(e.ctx, e.names.TimerStream(), e.names.ReaperConsumer())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 90*time.Second, "the bucket of the first settlement's removal done", func() error {
		info, err := reaper.Info(e.ctx)
		if err != nil {
			return err
		}
		if info.AckFloor.Consumer == 0 {
			return fmt.Errorf("no bucket done: delivered %d, ack pending %d", info.Delivered.Consumer, info.NumAckPending)
		}
		return nil
	})
	if st, err := e.f.Client.Status(e.ctx, "kept"); err != nil || st.Status != wire.StatusWaiting {
		t.Fatalf("after its first settlement's removal came due: %+v, %v; want the reset run kept, waiting", st, err)
	}
	checkReplay(t, e, "kept")
	if err := e.f.Client.SendEvent(e.ctx, "kept", "go", nil); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 90*time.Second, "the run removed after it settled again", func() error {
		if _, err := e.f.Client.Status(e.ctx, "kept"); !errors.Is(err, runrecord.ErrRemoved) {
			return fmt.Errorf("status: %w", err)
		}
		return nil
	})
}
