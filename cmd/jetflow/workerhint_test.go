package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestStatusNamesTasksWithoutWorker: status names the task in flight that
// no worker is pulling, first never pulled, then, after a worker served
// one invocation and left, how long nothing was pulled; --json lists it.
func TestStatusNamesTasksWithoutWorker(t *testing.T) {
	t.Parallel()
	f := verbServer(t) // serves echo, not cat
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if err := f.Client.StartRun(ctx, "cat", "cat-alone", nil); err != nil {
		t.Fatal(err)
	}
	statusShows(t, f, "cat-alone", "no worker is pulling cat@1: 1 invocation waiting, never pulled")
	out, _, exit := verb(t, f, "status", "cat-alone", "--json")
	var st struct {
		Workers []struct {
			Task, Version    string
			Consumer         bool
			Pending, Pulling int
		} `json:"workersMissing"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || exit != 0 {
		t.Fatalf("status --json: exit %d, %v:\n%s", exit, err, out)
	}
	if len(st.Workers) != 1 || st.Workers[0].Task != "cat" || st.Workers[0].Version != "1" || !st.Workers[0].Consumer || st.Workers[0].Pending != 1 || st.Workers[0].Pulling != 0 {
		t.Errorf("status --json workersMissing %+v, want cat@1 with 1 pending and no pull", st.Workers)
	}

	// A worker comes, serves the run, and goes.
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register("cat", "1", func(context.Context, worker.Invocation) (any, error) { return "meow", nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "cat-alone", wire.StatusDone)
	if out, _, _ := verb(t, f, "status", "cat-alone"); strings.Contains(out, "workers") {
		t.Errorf("status of a done run names workers:\n%s", out)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.StartRun(ctx, "cat", "cat-left", nil); err != nil {
		t.Fatal(err)
	}
	statusShows(t, f, "cat-left", "no worker is pulling cat@1: 1 invocation waiting, nothing pulled for ")
}

// statusShows waits until status of run id prints want (an invocation is
// published after the record that lists it is saved; an input is applied
// after it is sent).
func statusShows(t *testing.T, f interface{ URL() string }, id, want string) {
	t.Helper()
	natstest.WaitFor(t, verbBound, "status "+id+" showing "+want, func() error {
		out, errOut, exit := runEnv(t, nil, "", "status", id, "--nats", f.URL())
		if exit != 0 || !strings.Contains(out, want) {
			return fmt.Errorf("exit %d:\n%s%s", exit, out, errOut)
		}
		return nil
	})
}

// TestStartWaitNamesTasksWithoutWorker: start --wait says on standard
// error which task waits for a worker once the run stops moving.
func TestStartWaitNamesTasksWithoutWorker(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "start", "cat", "--id", "cat-wait", "--wait", "--nats", f.URL())
	cmd.Env = testEnv(nil)
	var out lockedBuffer
	errOut := newMarkBuffer("waiting for a worker: no worker is pulling cat@1: 1 invocation waiting, never pulled\n")
	cmd.Stdout, cmd.Stderr = &out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-errOut.found:
	case err := <-done:
		t.Fatalf("start --wait ended (%v) without naming the task:\n%s%s", err, out.String(), errOut)
	case <-ctx.Done():
		t.Fatalf("start --wait named no task in %s:\n%s%s", verbBound, out.String(), errOut)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("start --wait after Ctrl-C: %v, want exit 130", err)
	}
	if n := strings.Count(errOut.String(), "waiting for a worker"); n != 1 {
		t.Errorf("the hint came %d times, want once:\n%s", n, errOut)
	}
}
