package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// runnerBundle is what the runner tests need: a provisioned server, the
// schedule store, and runners that share them.
type runnerBundle struct {
	ctx   context.Context
	js    jetstream.JetStream
	c     *client.Client
	store *Store
	names subjects.Names
}

func setupRunners(t *testing.T) *runnerBundle {
	t.Helper()
	s := natstest.Server(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	names := subjects.Must("p")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	store, err := Open(ctx, js, names)
	if err != nil {
		t.Fatal(err)
	}
	return &runnerBundle{ctx: ctx, js: js, c: c, store: store, names: names}
}

// runner is a dispatcher's runner on the bundle's server, judging fires
// at clk's time.
func (b *runnerBundle) runner(clk clock.Clock) *Runner {
	return New(b.js, b.c, Config{Names: b.names, Logger: slog.New(slog.DiscardHandler), Clock: clk})
}

// fire is a fire of a schedule as the server stores it: its headers, and
// its stream sequence (act reads nothing else).
type fire struct {
	jetstream.Msg
	h    nats.Header
	meta *jetstream.MsgMetadata
}

func (f *fire) Headers() nats.Header { return f.h }

// storeFire stores a fire of schedule name whose next fire is next, as
// the server makes one. The server keeps Nats-Schedule-Next to itself, so
// the stream holds a message on the fire subject (a later fire, to
// catch-up one) and the fire handed over carries the header.
func (b *runnerBundle) storeFire(t *testing.T, name string, next time.Time) *fire {
	t.Helper()
	ack, err := b.js.Publish(b.ctx, b.names.ScheduleFire(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{}
	h.Set(wire.HeaderScheduleNext, next.UTC().Format(time.RFC3339Nano))
	return &fire{h: h, meta: &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: ack.Sequence}}}
}

// act has r act on f as its consumer would hand it over.
func (b *runnerBundle) act(r *Runner, name string, f *fire) error {
	return r.act(b.ctx, b.store, name, "fire", f, f.meta, r.log)
}

// starts counts the starts the input stream holds, by run.
func (b *runnerBundle) starts(t *testing.T) map[string]uint64 {
	t.Helper()
	s, err := b.js.Stream(b.ctx, b.names.InputStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(b.ctx, jetstream.WithSubjectFilter(b.names.InputAll()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		runID, kind, _, err := b.names.ParseInput(subj)
		if err != nil {
			t.Fatal(err)
		}
		if kind == subjects.KindStart {
			out[runID] += n
		}
	}
	return out
}

// failOnce fails the first publish on subject, as a stream with no
// leader does ("no response from stream"), or a dispatcher killed between
// saving the decision and publishing it.
func failOnce(subject string) (func(context.Context, string) error, *int) {
	var mu sync.Mutex
	failed := 0
	return func(_ context.Context, subj string) error {
		mu.Lock()
		defer mu.Unlock()
		if subj == subject && failed == 0 {
			failed++
			return errors.New("nats: no response from stream")
		}
		return nil
	}, &failed
}

// TestStartWhosePublishFailedIsSentByTheNextFire: a fire decides a start,
// saves it, and its publish fails (or its dispatcher dies before it);
// before the fire comes back another dispatcher takes the schedule's next
// fire; then the first fire comes back. Whatever the overlap and catch-up
// policies make of the two fires, the start decided is sent, once: every
// fire time that started a run has exactly one start in the input stream,
// and none is left pending.
func TestStartWhosePublishFailedIsSentByTheNextFire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		overlap, catchUp string
		// fire1 is the index of the first fire's next time (it stands
		// for the time before); the second fire's is fire1+1. fail is
		// the fire time whose publish fails.
		fire1, fail int
		// onTime: the two fires are taken on time (the first comes
		// back late); otherwise all are late.
		onTime bool
		// want are the fire times with a run; waiting the one a
		// buffer-one start holds (-1: none).
		want    []int
		waiting int
	}{
		// The chaos harness's case: a catch-up fire's start for an
		// earlier time fails; the next fire catches up from that time.
		{name: "catch-up all, allow, a caught-up time", overlap: wire.OverlapAllow, catchUp: wire.CatchUpAll, fire1: 3, fail: 1, want: []int{0, 1, 2, 3}, waiting: -1},
		{name: "catch-up all, allow, the fire's own time", overlap: wire.OverlapAllow, catchUp: wire.CatchUpAll, fire1: 3, fail: 2, want: []int{0, 1, 2, 3}, waiting: -1},
		// The next fire is skipped (the first run has no record yet,
		// so it has not settled), and the first fire, back late with
		// a later one stored, is dropped by catch-up one.
		{name: "catch-up one, skip", overlap: wire.OverlapSkip, catchUp: wire.CatchUpOne, fire1: 1, fail: 0, want: []int{0}, waiting: -1},
		{name: "catch-up one, buffer-one", overlap: wire.OverlapBufferOne, catchUp: wire.CatchUpOne, fire1: 1, fail: 0, want: []int{0}, waiting: 1},
		// The first fire comes back late, and catch-up none drops it.
		{name: "catch-up none, allow", overlap: wire.OverlapAllow, catchUp: wire.CatchUpNone, fire1: 1, fail: 0, onTime: true, want: []int{0, 1}, waiting: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRunners(t)
			// Monthly: the server fires nothing while the test runs;
			// the test stores the fires.
			info, err := b.store.Create(b.ctx, wire.Schedule{Name: "m", Workflow: "wf", Cron: "0 0 0 1 * *", Overlap: tc.overlap, CatchUp: tc.catchUp})
			if err != nil {
				t.Fatal(err)
			}
			times := info.Next(info.Stored, 6)
			runOf := func(i int) string { return RunID("m", times[i]) }
			late := times[5].Add(24 * time.Hour)
			clk := clock.NewManual(late)
			at := func(onTime time.Time) {
				if tc.onTime {
					clk.Set(onTime)
				}
			}
			a, other := b.runner(clk), b.runner(clk)
			hook, failed := failOnce(b.names.Start(runOf(tc.fail)))
			a.publishHook, other.publishHook = hook, hook

			first := b.storeFire(t, "m", times[tc.fire1])
			at(times[tc.fire1-1].Add(time.Second))
			if err := b.act(a, "m", first); err == nil {
				t.Fatal("the first fire acted on with its start's publish failing; want an error (it comes back)")
			}
			if *failed != 1 {
				t.Fatalf("publish of %s failed %d times, want 1", runOf(tc.fail), *failed)
			}
			second := b.storeFire(t, "m", times[tc.fire1+1])
			at(times[tc.fire1].Add(time.Second))
			if err := b.act(other, "m", second); err != nil {
				t.Fatal(err)
			}
			at(times[tc.fire1].Add(2 * time.Second))
			if err := b.act(other, "m", first); err != nil {
				t.Fatal(err)
			}

			want := map[string]uint64{}
			for _, i := range tc.want {
				want[runOf(i)] = 1
			}
			if got := b.starts(t); !maps.Equal(got, want) {
				t.Fatalf("starts in the input stream %v, want one for each of %v", got, slices.Sorted(maps.Keys(want)))
			}
			st, _, err := b.store.state(b.ctx, "m")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Pending) != 0 {
				t.Fatalf("starts left pending %v", st.Pending)
			}
			wantWaiting := ""
			if tc.waiting >= 0 {
				wantWaiting = times[tc.waiting].UTC().Format(time.RFC3339Nano)
			}
			if st.Waiting != wantWaiting {
				t.Fatalf("waiting start %q, want %q", st.Waiting, wantWaiting)
			}
		})
	}
}

// TestPendingStartStaysUntilItsPublishIsAcknowledged: while the input
// stream refuses a decided start, every fire of the schedule tries it
// again and fails (it comes back), the start stays pending, and nothing
// new is decided; the first fire after the stream takes it sends it.
func TestPendingStartStaysUntilItsPublishIsAcknowledged(t *testing.T) {
	t.Parallel()
	b := setupRunners(t)
	info, err := b.store.Create(b.ctx, wire.Schedule{Name: "m", Workflow: "wf", Cron: "0 0 0 1 * *", Overlap: wire.OverlapAllow, CatchUp: wire.CatchUpAll})
	if err != nil {
		t.Fatal(err)
	}
	times := info.Next(info.Stored, 4)
	clk := clock.NewManual(times[3].Add(time.Hour))
	r := b.runner(clk)
	var mu sync.Mutex
	down := true
	r.publishHook = func(context.Context, string) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return errors.New("nats: no response from stream")
		}
		return nil
	}
	first := b.storeFire(t, "m", times[1])
	for i := range 3 {
		if err := b.act(r, "m", first); err == nil {
			t.Fatalf("fire %d acted on while the input stream refuses starts", i)
		}
	}
	second := b.storeFire(t, "m", times[2])
	if err := b.act(r, "m", second); err == nil {
		t.Fatal("a later fire acted on while the input stream refuses starts")
	}
	st, _, err := b.store.state(b.ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if want := []wire.PendingStart{{Run: RunID("m", times[0]), Slot: times[0].UTC().Format(time.RFC3339Nano)}}; !slices.Equal(st.Pending, want) || st.Started != 1 {
		t.Fatalf("state %+v, want one start decided, pending %v", st, want)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	if err := b.act(r, "m", second); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{RunID("m", times[0]): 1, RunID("m", times[1]): 1}
	if got := b.starts(t); !maps.Equal(got, want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
	if st, _, err = b.store.state(b.ctx, "m"); err != nil || len(st.Pending) != 0 || st.Started != 2 {
		t.Fatalf("state %+v (%v), want two starts and none pending", st, err)
	}
}

// TestStateWithoutPendingStartsIsRead: a state stored before pending
// starts existed reads as one with none; one with them keeps them.
func TestStateWithoutPendingStartsIsRead(t *testing.T) {
	t.Parallel()
	b := setupRunners(t)
	if _, err := b.store.Create(b.ctx, wire.Schedule{Name: "m", Workflow: "wf", Every: "1h"}); err != nil {
		t.Fatal(err)
	}
	old := `{"lastSlot":"2026-12-03T01:00:00Z","lastRun":"m-20261203T010000Z","lastStarted":"2026-12-03T01:00:00.5Z","started":3,"skipped":0}`
	if _, err := b.js.Publish(b.ctx, b.names.ScheduleState("m"), []byte(old)); err != nil {
		t.Fatal(err)
	}
	info, err := b.store.Get(b.ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Pending != nil || info.State.Started != 3 || info.State.LastRun != "m-20261203T010000Z" {
		t.Fatalf("old state read as %+v", info.State)
	}
	r := b.runner(clock.Real{})
	sent, err := r.resend(b.ctx, b.store, info, r.log)
	if err != nil || len(sent) != 0 {
		t.Fatalf("resend of an old state: %v, %v; want nothing sent", sent, err)
	}
	if got := b.starts(t); len(got) != 0 {
		t.Fatal(fmt.Sprint("starts sent for an old state: ", got))
	}
}

// TestStartOfADispatcherKilledBeforePublishingIsSent: a dispatcher saves
// a fire's start and dies before publishing it, the fire in hand (not
// handed back: it returns after AckWait). Another dispatcher takes the
// schedule's next fires meanwhile; the schedule is paused before the
// fire returns, so that fire starts nothing when it does. The start the
// first dispatcher decided is published by the other's next fire, once.
func TestStartOfADispatcherKilledBeforePublishingIsSent(t *testing.T) {
	t.Parallel()
	b := setupRunners(t)
	if _, err := b.store.Create(b.ctx, wire.Schedule{Name: "k", Workflow: "wf", Every: "1s", Overlap: wire.OverlapAllow, CatchUp: wire.CatchUpNone}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	cfg := Config{Names: b.names, Logger: quiet, AckWait: 2 * time.Second}
	a := New(b.js, b.c, cfg)
	held := make(chan string, 1)
	var once sync.Once
	a.publishHook = func(ctx context.Context, subject string) error {
		err := error(nil)
		once.Do(func() {
			runID, _, _, perr := b.names.ParseInput(subject)
			if perr != nil {
				t.Error(perr)
			}
			held <- runID
			<-ctx.Done() // killed: nothing more happens in this process
			err = ctx.Err()
		})
		return err
	}
	a.Start()
	defer a.Stop()
	var killed string
	select {
	case killed = <-held:
	case <-b.ctx.Done():
		t.Fatal("no start decided")
	}
	st, _, err := b.store.state(b.ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRun != killed || pendingIndex(st, killed) < 0 {
		t.Fatalf("state %+v: want %s decided and pending", st, killed)
	}
	killedSlot, err := time.Parse(time.RFC3339Nano, st.LastSlot)
	if err != nil {
		t.Fatal(err)
	}

	other := New(b.js, b.c, cfg)
	other.Start()
	defer other.Stop()
	natstest.WaitFor(t, time.Minute, "a later fire acted on by the other dispatcher", func() error {
		st, _, err := b.store.state(b.ctx, "k")
		if err != nil {
			return err
		}
		if last, err := time.Parse(time.RFC3339Nano, st.LastSlot); err != nil || !last.After(killedSlot) {
			return fmt.Errorf("last fire time %q", st.LastSlot)
		}
		return nil
	})
	a.Stop()
	if _, err := b.store.Pause(b.ctx, "k", "test"); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, time.Minute, "every fire taken and acknowledged (the killed one's returned)", func() error {
		c, err := b.js.Consumer(b.ctx, b.names.ScheduleStream(), b.names.ScheduleConsumer())
		if err != nil {
			return err
		}
		ci, err := c.Info(b.ctx)
		if err != nil {
			return err
		}
		if ci.NumPending+uint64(ci.NumAckPending) > 0 {
			return fmt.Errorf("%d fires not taken, %d not acknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	other.Stop()
	starts := b.starts(t)
	if starts[killed] != 1 {
		t.Fatalf("run %s, decided by the killed dispatcher: %d starts, want 1 (all: %v)", killed, starts[killed], starts)
	}
	for run, n := range starts {
		if n != 1 {
			t.Fatalf("run %s: %d starts, want 1", run, n)
		}
	}
	if st, _, err = b.store.state(b.ctx, "k"); err != nil || len(st.Pending) != 0 {
		t.Fatalf("state %+v (%v), want no start pending", st, err)
	}
}

// TestWaitingStartAlwaysHasItsDelayedFire: a buffer-one fire whose start
// must wait fails to publish the delayed fire that looks again, and comes
// back (its nak). The start that waits then has its delayed fire stored,
// and the next fire starts nothing while it waits. A wait saved without
// its delayed fire would have held back every later fire for good: the
// fire that came back was dropped as a duplicate of the one that saved
// the wait.
func TestWaitingStartAlwaysHasItsDelayedFire(t *testing.T) {
	t.Parallel()
	b := setupRunners(t)
	info, err := b.store.Create(b.ctx, wire.Schedule{Name: "m", Workflow: "wf", Cron: "0 0 0 1 * *", Overlap: wire.OverlapBufferOne, CatchUp: wire.CatchUpOne})
	if err != nil {
		t.Fatal(err)
	}
	times := info.Next(info.Stored, 4)
	r := b.runner(clock.NewManual(times[3].Add(24 * time.Hour)))
	hook, failed := failOnce(b.names.ScheduleJitterAt("m", strconv.FormatInt(times[1].Unix(), 10)))
	r.publishHook = hook
	// The first fire's run has no record yet: it has not settled.
	if err := b.act(r, "m", b.storeFire(t, "m", times[1])); err != nil {
		t.Fatal(err)
	}
	second := b.storeFire(t, "m", times[2])
	if err := b.act(r, "m", second); err == nil || *failed != 1 {
		t.Fatalf("the second fire acted on (%v) with its delay's publish failing %d times; want an error", err, *failed)
	}
	if err := b.act(r, "m", second); err != nil {
		t.Fatal(err)
	}
	if err := b.act(r, "m", b.storeFire(t, "m", times[3])); err != nil {
		t.Fatal(err)
	}
	st, _, err := b.store.state(b.ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiting != times[1].UTC().Format(time.RFC3339Nano) || st.Started != 1 || st.Skipped != 1 {
		t.Fatalf("state %+v: want the second fire's start waiting, the third's skipped", st)
	}
	waiting := times[1]
	s, err := b.js.Stream(b.ctx, b.names.ScheduleStream())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLastMsgForSubject(b.ctx, b.names.ScheduleJitterAt("m", strconv.FormatInt(waiting.Unix(), 10))); err != nil {
		t.Fatalf("the start for %s waits (state %+v) without a delayed fire: %v", st.Waiting, st, err)
	}
}

// TestSkippedFireTakenAgainIsNotJudgedTwice: a fire dropped by the
// overlap policy whose acknowledgement was lost comes back after a later
// fire was acted on. It was decided: judged again, it would count a
// second skip, or start the run it dropped once the previous run let it.
func TestSkippedFireTakenAgainIsNotJudgedTwice(t *testing.T) {
	t.Parallel()
	b := setupRunners(t)
	info, err := b.store.Create(b.ctx, wire.Schedule{Name: "s", Workflow: "wf", Cron: "*/10 * * * * *", Overlap: wire.OverlapSkip, CatchUp: wire.CatchUpAll})
	if err != nil {
		t.Fatal(err)
	}
	times := info.Next(info.Stored, 3)
	clk := clock.NewManual(times[0].Add(time.Second))
	r := b.runner(clk)
	state := func() wire.ScheduleState {
		st, _, err := b.store.state(b.ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The first fire starts a run; the second, while that run has no
	// record and is within its start's grace, is skipped.
	if err := b.act(r, "s", b.storeFire(t, "s", times[1])); err != nil {
		t.Fatal(err)
	}
	clk.Set(times[1].Add(time.Second))
	skipped := b.storeFire(t, "s", times[2])
	if err := b.act(r, "s", skipped); err != nil {
		t.Fatal(err)
	}
	if st := state(); st.Started != 1 || st.Skipped != 1 {
		t.Fatalf("state %+v: want one run started and the second fire skipped", st)
	}
	// The third fire, once the first run's grace is over, starts a run;
	// then, that run's grace over too, the skipped fire comes back with
	// nothing to hold it back.
	clk.Set(times[0].Add(2 * startGrace))
	if err := b.act(r, "s", b.storeFire(t, "s", times[2].Add(10*time.Second))); err != nil {
		t.Fatal(err)
	}
	clk.Set(times[0].Add(4 * startGrace))
	if err := b.act(r, "s", skipped); err != nil {
		t.Fatal(err)
	}
	st := state()
	starts := b.starts(t)
	if st.Started != 2 || st.Skipped != 1 || len(starts) != 2 || starts[RunID("s", times[1])] != 0 {
		t.Fatalf("state %+v, starts %v: want the runs of %s and %s started and the fire of %s skipped once",
			st, starts, times[0].Format(time.RFC3339), times[2].Format(time.RFC3339), times[1].Format(time.RFC3339))
	}
}
