package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/integration/compat/fixture"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
)

const (
	// rollingPrefix names the shared deployment (not the default, so
	// that both releases are seen to agree on a configured one).
	rollingPrefix = "compat"
	// rollingAckWait is every dispatcher's AckWait: how soon the inputs
	// the killed old dispatcher held go to another.
	rollingAckWait = 2 * time.Second
	// rollingWave is how many runs each of the two waves starts.
	rollingWave = 200
)

// rollingRun is what run i of the rolling upgrade test runs, the event it
// gets (nil for none), how many tasks it invokes and how it must end.
func rollingRun(i int) (workflow string, input any, event *fixture.Action, tasks int, end fixture.Outcome) {
	done := func(state, result string) fixture.Outcome {
		return fixture.Outcome{Status: "done", State: state, Result: []byte(result)}
	}
	switch i % 4 {
	case 0:
		return "one", i, nil, 1, done("/states/done", fmt.Sprint(2*i))
	case 1:
		return "fan", i, nil, 3, done("/states/done", fmt.Sprintf(`{"d":%d,"n":%d,"s":%d,"sum":%d}`, 2*i, -i, i*i, 2*i+i*i-i))
	case 2:
		ev := fixture.Action{Kind: fixture.ActionEvent, Event: "approve", Payload: fmt.Appendf(nil, `{"ok":true,"amount":%d}`, i)}
		return "approval", map[string]int{"order": i}, &ev, 1, done("/states/done", fmt.Sprint(2*i))
	default:
		return "sleepy", map[string]int{"n": i}, nil, 0, done("/states/late", fmt.Sprintf(`{"n":%d}`, i))
	}
}

func rollingID(i int) string { return fmt.Sprintf("roll-%04d", i) }

// TestRollingUpgrade replaces the previous release's dispatchers with
// this build's under load, on one nats-server and one prefix. The
// previous release (built from its commit, previousRelease) provisions
// the deployment and deploys two workflows with its own command; this
// build joins, provisions over it, deploys two more and serves beside it;
// this build's workers serve the tasks. A first wave of runs (one task,
// a fan-out DAG, an event wait, a timer) is taken by both until the old
// dispatcher is stopped with SIGTERM midway; a second wave by this build
// and a second old dispatcher, which is killed with SIGKILL midway. Every
// run must settle with its own result, every input apply once, every
// task attempt run once (one invocation stored each), and every run
// replay equal.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	bin := buildRelease(t, previousRelease)
	ctx, logs := testContext(t)
	srv, err := embedded.Start(ctx, embedded.Config{
		Listen: "127.0.0.1:-1", DataDir: t.TempDir(), Logger: logs.logger("nats-server"),
		ReadyTimeout: natstest.StartTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopWithin(t, "nats-server", srv.Stop) })
	url := srv.ClientURL()

	// The deployment as the previous release made it.
	oldA := startOldDispatcher(t, "old dispatcher A", bin, url, rollingPrefix, rollingAckWait, true)
	dir := t.TempDir()
	for _, name := range []string{"one", "fan"} {
		deployOld(t, bin, url, dir, name)
	}
	// This build joins it, as an upgraded `jetflow serve` would.
	cfg := dispatcherConfig(rollingAckWait, logs.logger("dispatcher"))
	f, err := fleet.Start(ctx, fleet.Config{
		URL: url, Prefix: rollingPrefix, Dispatcher: &cfg, Logger: logs.logger("fleet"),
		NATSOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond)},
	})
	if err != nil {
		t.Fatalf("this build joining the deployment of release %s: %v", previousRelease[:7], err)
	}
	d := newDeployment(t, ctx, f, logs)
	for _, name := range []string{"approval", "sleepy"} {
		deployNew(t, d, name)
	}
	d.addWorker("worker-1", fixture.Only("double", "square", "neg"))
	d.addWorker("worker-2", fixture.Only("double", "square", "neg"))

	tasksUpTo := func(n int) int {
		sum := 0
		for i := range n {
			_, _, _, k, _ := rollingRun(i)
			sum += k
		}
		return sum
	}
	// Wave 1: the old dispatcher stops gracefully a third of the way.
	wave := d.startRolling(t, 0, rollingWave)
	d.waitTasks(t, tasksUpTo(rollingWave)/3)
	appliedA := oldA.applied(t)
	oldA.stop(t, syscall.SIGTERM)
	wave.Wait()
	// Wave 2: another old dispatcher, killed a third of the way.
	oldB := startOldDispatcher(t, "old dispatcher B", bin, url, rollingPrefix, rollingAckWait, false)
	wave = d.startRolling(t, rollingWave, 2*rollingWave)
	d.waitTasks(t, tasksUpTo(rollingWave)+(tasksUpTo(2*rollingWave)-tasksUpTo(rollingWave))/3)
	appliedB := oldB.applied(t)
	oldB.stop(t, syscall.SIGKILL)
	wave.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if appliedA == 0 || appliedB == 0 {
		t.Errorf("the old dispatchers applied %v and %v inputs before they stopped: both must have served for this test to show anything", appliedA, appliedB)
	}

	const runs = 2 * rollingWave
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, _, _, _, want := rollingRun(i)
			wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			st, err := f.Client.Wait(wctx, rollingID(i))
			if err != nil {
				t.Errorf("run %s did not settle: %v", rollingID(i), err)
				return
			}
			if why := sameOutcome(outcomeOf(st), want); why != "" {
				t.Errorf("run %s %s", rollingID(i), why)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	d.consumerSettled(t, 30*time.Second)

	// Nothing twice: one invocation stored and run per task attempt, each
	// input applied once.
	tasks := tasksUpTo(runs)
	if got := d.lastSeq(t, d.names.TaskStream()); got != uint64(tasks) {
		t.Errorf("the task stream stored %d invocations, want %d", got, tasks)
	}
	if got := d.tasks.total(); got != tasks {
		t.Errorf("the workers ran %d invocations, want %d", got, tasks)
	}
	ids := make([]string, runs)
	for i := range runs {
		ids[i] = rollingID(i)
		d.checkOnce(t, ids[i], nil)
		if rep, _ := d.tasks.repeated(ids[i]); len(rep) > 0 {
			t.Errorf("run %s: task attempts repeated: %v", ids[i], rep)
		}
	}
	d.checkReplays(t, ids)
	checkNoSchedules(t, d)
	t.Logf("%d runs (%d tasks) across release %s and this build: the old dispatchers applied %v inputs before SIGTERM and %v before SIGKILL",
		runs, tasks, previousRelease[:7], appliedA, appliedB)
}

// startRolling starts runs from up to to, each with its event, from a
// few publishers; Wait on the result waits until all are published.
func (d *deployment) startRolling(t *testing.T, from, to int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	const publishers = 4
	for p := range publishers {
		wg.Go(func() {
			for i := from + p; i < to; i += publishers {
				wf, input, ev, _, _ := rollingRun(i)
				if err := d.f.Client.StartRun(d.ctx, wf, rollingID(i), input); err != nil {
					t.Errorf("start run %s: %v", rollingID(i), err)
					return
				}
				if ev != nil {
					if err := d.f.Client.SendEvent(d.ctx, rollingID(i), ev.Event, ev.Payload); err != nil {
						t.Errorf("event to run %s: %v", rollingID(i), err)
						return
					}
				}
			}
		})
	}
	return &wg
}

// waitTasks waits until the workers ran n invocations.
func (d *deployment) waitTasks(t *testing.T, n int) {
	t.Helper()
	natstest.WaitFor(t, time.Minute, fmt.Sprintf("%d tasks run", n), func() error {
		if got := d.tasks.total(); got < n {
			return fmt.Errorf("%d run", got)
		}
		return nil
	})
}

// deployOld deploys a fixture workflow with the previous release's
// command.
func deployOld(t *testing.T, bin, url, dir, name string) {
	t.Helper()
	w, ok := fixture.WorkflowNamed(name)
	if !ok {
		t.Fatalf("no fixture workflow %s", name)
	}
	doc := filepath.Join(dir, name+".json")
	if err := os.WriteFile(doc, []byte(w.Doc), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"deploy", name, doc, "--nats", url, "--prefix", rollingPrefix}
	if w.Policy != "" {
		pol := filepath.Join(dir, name+".policy.json")
		if err := os.WriteFile(pol, []byte(w.Policy), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--policy", pol)
	}
	runCLI(t, bin, args...)
}

// deployNew deploys a fixture workflow with this build.
func deployNew(t *testing.T, d *deployment, name string) {
	t.Helper()
	w, ok := fixture.WorkflowNamed(name)
	if !ok {
		t.Fatalf("no fixture workflow %s", name)
	}
	var p *policy.Policy
	if w.Policy != "" {
		var err error
		if p, err = policy.Parse([]byte(w.Policy)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.f.DeployWith(d.ctx, name, []byte(w.Doc), fleet.DeployOptions{Policy: p}); err != nil {
		t.Fatalf("deploy %s: %v", name, err)
	}
}
