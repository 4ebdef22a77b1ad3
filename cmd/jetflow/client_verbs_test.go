package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// gateDoc echoes its input through a task, then ends, or waits for a "go"
// event when the input says {"wait": true}.
const gateDoc = `{"$workflow":"0.2","revision":"g1","initial":"work","states":{
 "work":{"work":{"task":"echo","version":"1"},"then":"route"},
 "route":{"choose":[{"guard":{"$eq":["$.context.data.wait",true]},"to":"gate"}],"otherwise":"end"},
 "gate":{"on":[{"event":"go","to":"end"}]},
 "end":{"final":true}}}`

// catDoc runs one task that no Go worker serves: worker exec does.
const catDoc = `{"$workflow":"0.2","revision":"c1","initial":"a","states":{
 "a":{"work":{"task":"cat","version":"1"},"then":"b"},"b":{"final":true}}}`

// verbBound bounds every process and wait of these tests.
const verbBound = 60 * time.Second

// verbServer is a deployment in the test process for the client verbs to
// talk to: an embedded server on a free port, a dispatcher, the gate and
// cat workflows, and a Go SDK worker for echo.
func verbServer(t *testing.T) *fleet.Fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded:   embedded.Config{Listen: "127.0.0.1:-1", Logger: quiet},
		Provision:  provision.ProvisionOptions{ErasableHistory: true}, // TestHistoryAndReplay purges a start
		Dispatcher: &dispatcher.Config{},
		Logger:     quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	for name, doc := range map[string]string{"gate": gateDoc, "cat": catDoc} {
		if _, err := f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Register("echo", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		var in map[string]any
		if err := inv.DecodeInput(&in); err != nil {
			return nil, err
		}
		if in["fail"] == true {
			return nil, worker.WithCode("ASKED", worker.NonRetryable(fmt.Errorf("asked to fail")))
		}
		return in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return f
}

// verb runs jetflow against f and returns its output and exit status.
func verb(t *testing.T, f *fleet.Fleet, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	return runEnv(t, nil, "", append(args, "--nats", f.URL())...)
}

// waitStatus waits until run id has status want.
func waitStatus(t *testing.T, f *fleet.Fleet, id, want string) *wire.Status {
	t.Helper()
	var st *wire.Status
	natstest.WaitFor(t, verbBound, "run "+id+" "+want, func() error {
		var err error
		if st, err = f.Client.Status(context.Background(), id); err != nil {
			return err
		}
		if st.Status != want {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
	return st
}

func TestStartPrintsRunID(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	out, errOut, exit := verb(t, f, "start", "gate", "--input", `{"n":1}`)
	id := strings.TrimSpace(out)
	if exit != 0 || !regexp.MustCompile(`^gate-\d{8}-\d{6}-[a-z2-9]{5}$`).MatchString(id) {
		t.Fatalf("start: exit %d, stdout %q, stderr %q", exit, out, errOut)
	}
	st := waitStatus(t, f, id, wire.StatusDone)
	if string(st.Result) != `{"n":1}` {
		t.Errorf("result %s", st.Result)
	}
	out, _, exit = verb(t, f, "start", "gate", "--id", "mine-1")
	if exit != 0 || out != "mine-1\n" {
		t.Fatalf("start --id: exit %d, %q", exit, out)
	}
	waitStatus(t, f, "mine-1", wire.StatusDone)
	_, errOut, exit = verb(t, f, "start", "gate", "--id", "mine-1")
	if exit == 0 || !strings.Contains(errOut, `--id: run "mine-1" already exists`) {
		t.Errorf("a second start of mine-1: exit %d, %q", exit, errOut)
	}
	_, errOut, exit = verb(t, f, "start", "nowhere")
	if exit == 0 || !strings.Contains(errOut, `workflow "nowhere" is not deployed`) {
		t.Errorf("start of an unknown workflow: exit %d, %q", exit, errOut)
	}
	// A priority travels in the start and the run keeps it.
	if out, errOut, exit := verb(t, f, "start", "gate", "--id", "urgent-1", "--priority", "7"); exit != 0 || out != "urgent-1\n" {
		t.Fatalf("start --priority 7: exit %d, %q, %q", exit, out, errOut)
	}
	waitStatus(t, f, "urgent-1", wire.StatusDone)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if rec, err := f.Client.Record(ctx, "urgent-1"); err != nil || rec.Priority == nil || *rec.Priority != 7 {
		t.Errorf("the record of a run started with --priority 7: %+v, %v", rec, err)
	}
	if _, errOut, exit := verb(t, f, "start", "gate", "--priority", "12"); exit == 0 || !strings.Contains(errOut, "--priority: 12 is outside 0 to 9") {
		t.Errorf("start --priority 12: exit %d, %q", exit, errOut)
	}
}

// TestStartWaitExitStatus follows runs to each end: done exits 0, failed
// 1, cancelled 2, each with its progress lines.
func TestStartWaitExitStatus(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	cases := []struct {
		name, input string
		exit        int
		want        []string
	}{
		{"done", `{"n":2}`, 0, []string{"state work", "task echo echo@1 invoked, attempt 1", `task echo echo@1 ok {"n":2}`, "state route", "state end", "done in ", `result {"n":2}`}},
		{"failed", `{"fail":true}`, 1, []string{"state work", "task echo echo@1 attempt 1 failed (ASKED): asked to fail\n", "failed in ", "error JF2006 /nodes/task task echo@1 in state work failed (ASKED): asked to fail\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, exit := verb(t, f, "start", "gate", "--id", "wait-"+c.name, "--input", c.input, "--wait")
			if exit != c.exit || !strings.HasPrefix(out, "wait-"+c.name+"\n") {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", exit, c.exit, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), verbBound)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "start", "gate", "--id", "wait-cancel", "--input", `{"wait":true}`, "--wait", "--nats", f.URL())
		cmd.Env = testEnv(nil)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, f, "wait-cancel", wire.StatusWaiting)
		natstest.WaitFor(t, verbBound, "the waiting line", func() error {
			if !strings.Contains(out.String(), "waiting for event go") {
				return fmt.Errorf("output so far: %q", out.String())
			}
			return nil
		})
		stdout, errOut, exit := verb(t, f, "cancel", "wait-cancel", "--reason", "test")
		if exit != 0 || stdout != "cancel of run wait-cancel requested\n" {
			t.Fatalf("cancel: exit %d, %q %q", exit, stdout, errOut)
		}
		err := cmd.Wait()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("start --wait of a cancelled run: %v; output:\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "\ncancelled in ") {
			t.Errorf("no cancelled line:\n%s", out.String())
		}
		_, errOut, exit = verb(t, f, "cancel", "wait-cancel")
		if exit == 0 || !strings.Contains(errOut, "run wait-cancel is already cancelled") {
			t.Errorf("cancel of a cancelled run: exit %d, %q", exit, errOut)
		}
	})
}

func TestEventMovesWaitingRun(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	if _, _, exit := verb(t, f, "start", "gate", "--id", "ev-1", "--input", `{"wait":true}`); exit != 0 {
		t.Fatal("start failed")
	}
	waitStatus(t, f, "ev-1", wire.StatusWaiting)
	_, errOut, exit := verb(t, f, "event", "ev-1", "stop")
	if exit != 0 || !strings.Contains(errOut, "warning: run ev-1 waits in gate for event go, not event stop: its wait ignores it") {
		t.Errorf("an event the run does not wait for: exit %d, %q", exit, errOut)
	}
	statusShows(t, f, "ev-1", "stop")
	out, errOut, exit := verb(t, f, "event", "ev-1", "go", "--payload", `{"by":"test"}`)
	if strings.Contains(errOut, "warning") {
		t.Errorf("an event the run waits for warned: %q", errOut)
	}
	if exit != 0 || out != "sent go to run ev-1\n" {
		t.Fatalf("event: exit %d, %q %q", exit, out, errOut)
	}
	st := waitStatus(t, f, "ev-1", wire.StatusDone)
	if st.State != "/states/end" {
		t.Errorf("ended in %s", st.State)
	}
	_, errOut, exit = verb(t, f, "event", "ev-1", "go")
	if exit == 0 || !strings.Contains(errOut, "run ev-1 is already done") {
		t.Errorf("event to a done run: exit %d, %q", exit, errOut)
	}
	_, errOut, exit = verb(t, f, "event", "ev-nobody", "go")
	if exit != 1 || !strings.Contains(errOut, "run ev-nobody does not exist: it has no record and the input stream holds no start of it") {
		t.Errorf("event to an unknown run: exit %d, %q", exit, errOut)
	}
}

// TestVerbsRefuseRunsThatDoNotExist: an input for a run with neither a
// record nor a start would be dropped by the dispatchers, so the verbs
// that send one say the run does not exist and exit 1; replay does not
// offer to restore it.
func TestVerbsRefuseRunsThatDoNotExist(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	for _, args := range [][]string{
		{"event", "ghost", "go"},
		{"cancel", "ghost"},
		{"pause", "ghost"},
		{"terminate", "ghost", "--reason", "test"},
		{"replay", "ghost"},
	} {
		out, errOut, exit := verb(t, f, args...)
		if exit != 1 || !strings.Contains(errOut, "run ghost does not exist: it has no record and the input stream holds no start of it") || strings.Contains(out+errOut, "--restore") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 saying the run does not exist", strings.Join(args, " "), exit, out, errOut)
		}
	}
	// A run that exists gets the input; nothing stopped it.
	if _, _, exit := verb(t, f, "start", "gate", "--id", "real", "--input", `{"wait":true}`); exit != 0 {
		t.Fatal("start failed")
	}
	if out, errOut, exit := verb(t, f, "cancel", "real"); exit != 0 || strings.Contains(errOut, "does not exist") {
		t.Errorf("cancel of a started run: exit %d, %q %q", exit, out, errOut)
	}
	waitStatus(t, f, "real", wire.StatusCancelled)
}

func TestStatusAndList(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	for id, input := range map[string]string{"s-done": `{"n":3}`, "s-wait": `{"wait":true}`, "s-fail": `{"fail":true}`} {
		if err := f.Client.StartRun(ctx, "gate", id, json.RawMessage(input)); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus(t, f, "s-done", wire.StatusDone)
	waitStatus(t, f, "s-wait", wire.StatusWaiting)
	waitStatus(t, f, "s-fail", wire.StatusFailed)

	out, _, exit := verb(t, f, "status", "s-done")
	for _, w := range []string{"run       s-done", "workflow  gate@g1", "status    done", "state     end", `result    {"n":3}`, "started   ", "updated   "} {
		if exit != 0 || !strings.Contains(out, w) {
			t.Errorf("status s-done lacks %q (exit %d):\n%s", w, exit, out)
		}
	}
	out, _, _ = verb(t, f, "status", "s-wait")
	if !strings.Contains(out, "status    waiting for event go") || !strings.Contains(out, "state     gate") {
		t.Errorf("status s-wait:\n%s", out)
	}
	out, _, _ = verb(t, f, "status", "s-fail")
	if !strings.Contains(out, "error     JF2006 /nodes/task task echo@1 in state work failed (ASKED): asked to fail\n") {
		t.Errorf("status s-fail:\n%s", out)
	}
	out, _, exit = verb(t, f, "status", "s-done", "--json")
	var st struct {
		wire.Status
		Started, Updated string
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || exit != 0 {
		t.Fatalf("status --json: exit %d, %v: %q", exit, err, out)
	}
	if st.Run != "s-done" || st.Status.Status != "done" || string(st.Result) != `{"n":3}` || st.Workflow != "gate" || st.Revision != "g1" || st.Started == "" || st.Updated == "" {
		t.Errorf("status --json: %+v", st)
	}
	_, errOut, exit := verb(t, f, "status", "s-none")
	if exit == 0 || !strings.Contains(errOut, "run s-none not found") {
		t.Errorf("status of an unknown run: exit %d, %q", exit, errOut)
	}

	list := func(args ...string) []string {
		t.Helper()
		out, errOut, exit := verb(t, f, append([]string{"list", "--json"}, args...)...)
		var runs []wire.Status
		if err := json.Unmarshal([]byte(out), &runs); err != nil || exit != 0 {
			t.Fatalf("list --json %v: exit %d, %v: %q %q", args, exit, err, out, errOut)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.Run+":"+r.Status)
		}
		return ids
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "s-done:done s-fail:failed s-wait:waiting"},
		{[]string{"--status", "waiting"}, "s-wait:waiting"},
		{[]string{"--workflow", "gate", "--status", "failed"}, "s-fail:failed"},
		{[]string{"--workflow", "cat"}, ""},
	} {
		if got := strings.Join(list(c.args...), " "); got != c.want {
			t.Errorf("list %v: %q, want %q", c.args, got, c.want)
		}
	}
	out, _, _ = verb(t, f, "list")
	if !regexp.MustCompile(`(?m)^RUN\s+WORKFLOW\s+STATUS\s+STATE\s+UPDATED\n(.*\n){3}$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^s-wait\s+gate@g1\s+waiting\s+gate\s`).MatchString(out) {
		t.Errorf("list:\n%s", out)
	}
}

// TestBadNamesRefused checks that every name that cannot be a subject
// token is refused before anything is sent, naming the argument or flag.
func TestBadNamesRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"start", "gate", "--id", "a.b"}, `--id: invalid name: run id "a.b" has '.' (a subject token separator) at byte 1`},
		{[]string{"start", "g.x"}, `argument NAME: invalid name: workflow name "g.x"`},
		{[]string{"start"}, "missing argument NAME"},
		{[]string{"start", "gate", "--input", "{bad"}, "--input is not JSON"},
		{[]string{"start", "gate", "--input", "@/nonexistent/in.json"}, "--input: open /nonexistent/in.json"},
		{[]string{"event", "a.b", "go"}, `argument RUN: invalid name: run id "a.b"`},
		{[]string{"event", "r1", "*"}, `argument TYPE: invalid name: event type "*" has '*' (a subject wildcard)`},
		{[]string{"event", "r1"}, "missing argument TYPE"},
		{[]string{"event", "r1", "go", "--payload", "[1,"}, "--payload is not JSON"},
		{[]string{"cancel", "*"}, `argument RUN: invalid name: run id "*"`},
		{[]string{"status", "a b"}, `argument RUN: invalid name: run id "a b" has white space`},
		{[]string{"list", "--status", "sleeping"}, `--status "sleeping" is not a run status`},
		{[]string{"list", "--workflow", "a>"}, `--workflow: invalid name: workflow name "a>"`},
		{[]string{"list", "--where", "customer"}, `--where "customer": want NAME=VALUE`},
		{[]string{"list", "--where", "a.b=1"}, `--where "a.b=1": invalid name: search attribute name "a.b"`},
		{[]string{"worker", "exec", "--task", "cat", "--", "cat"}, `--task "cat": want NAME@VERSION`},
		{[]string{"worker", "exec", "--task", "c.t@1", "--", "cat"}, `--task: invalid name: task name "c.t"`},
		{[]string{"worker", "exec", "--task", "cat@1"}, "missing COMMAND after --"},
		{[]string{"worker", "exec", "--task", "cat@1", "--", "/nonexistent/prog"}, "COMMAND: "},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			// Nothing listens on port 1: a verb that got as far as
			// connecting would fail differently.
			out, errOut, exit := runEnv(t, nil, "", append(c.args, "--nats", "nats://127.0.0.1:1")...)
			if exit != 2 || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", exit, out, errOut, c.want)
			}
		})
	}
}

// TestWorkerExecServesTask serves a task with `sh -c cat`, whose output
// is the request it reads, and stops the worker with an interrupt.
func TestWorkerExecServesTask(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "worker", "exec", "--nats", f.URL(), "--task", "cat@1", "--concurrency", "2", "--", "sh", "-c", "cat")
	cmd.Env = testEnv(nil)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	out, errOut, exit := verb(t, f, "start", "cat", "--id", "cat-1", "--input", `{"x":1}`, "--wait")
	if exit != 0 {
		t.Fatalf("start --wait: exit %d:\n%s%s\nworker:\n%s", exit, out, errOut, logs.String())
	}
	st, err := f.Client.Status(ctx, "cat-1")
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Run, Task, Version string
		Input              map[string]any
	}
	if err := json.Unmarshal(st.Result, &req); err != nil || req.Run != "cat-1" || req.Task != "cat" || req.Version != "1" || req.Input["x"] != 1.0 {
		t.Fatalf("result %s (%v)", st.Result, err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker after an interrupt: %v\n%s", err, logs.String())
	}
	for _, w := range []string{"msg=serving task=cat version=1", "msg=\"draining", "msg=stopped"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("worker log lacks %q:\n%s", w, logs.String())
		}
	}
}

func TestClientVerbsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"start"}, {"event"}, {"cancel"}, {"status"}, {"list"}, {"worker", "exec"}, {"demo"}, {"jobs"}, {"jobs", "watch"}} {
		out, _, exit := runEnv(t, nil, "", append(args, "--help")...)
		if exit != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v --help: exit %d, %q", args, exit, out)
		}
	}
}
