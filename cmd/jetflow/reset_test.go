package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetflow/jetflow/worker"
)

// twiceDoc runs one task, then another, and ends with the second's
// output.
const twiceDoc = `{"$workflow":"0.2","revision":"t1","initial":"a","states":{
 "a":{"work":{"task":"first","version":"1"},"then":"b"},
 "b":{"work":{"task":"second","version":"1"},"then":"c"},"c":{"final":true}}}`

// TestResetVerb: reset --to-state finds the input after which the run
// entered a state and says which, the reset run runs that state's task
// again (--wait follows it to its end), status counts the reset, history
// marks what it superseded, and a point the run cannot go back to is
// refused with exit 1 and the reason.
func TestResetVerb(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, err := f.Deploy(ctx, "twice", []byte(twiceDoc)); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var seconds atomic.Int32
	if err := w.Register("first", "1", func(context.Context, worker.Invocation) (any, error) { return "one", nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("second", "1", func(context.Context, worker.Invocation) (any, error) {
		return fmt.Sprintf("second-%d", seconds.Add(1)), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	if out, _, exit := runEnv(t, nil, "", "reset", "--help"); exit != 0 || !strings.Contains(out, "--to-state") {
		t.Errorf("reset --help: exit %d, %q", exit, out)
	}
	if _, errOut, exit := verb(t, f, "reset", "tw-1"); exit != 2 || !strings.Contains(errOut, "exactly one of --to SEQ and --to-state") {
		t.Errorf("reset without a point: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "reset", "tw-1", "--to-state", "b#0"); exit != 2 || !strings.Contains(errOut, "a number from 1") {
		t.Errorf("reset to visit 0: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "reset", "nobody", "--to", "1"); exit == 0 || !strings.Contains(errOut, "run nobody has no record") {
		t.Errorf("reset of a run that does not exist: exit %d, %q", exit, errOut)
	}
	if _, _, exit := verb(t, f, "start", "twice", "--id", "tw-1", "--wait"); exit != 0 {
		t.Fatalf("start --wait: exit %d", exit)
	}
	stdout, errOut, exit := verb(t, f, "reset", "tw-1", "--to-state", "b", "--reason", "rerun b", "--wait")
	if exit != 0 || !strings.Contains(stdout, "--to-state b is input 2 (the same as: jetflow reset tw-1 --to 2)") ||
		!strings.Contains(stdout, "run tw-1 reset to its state after input 2") || !strings.HasSuffix(stdout, "done in c\nresult \"second-2\"\n") {
		t.Fatalf("reset --to-state b --wait: exit %d, stdout %q, stderr %q", exit, stdout, errOut)
	}
	if stdout, _, exit := verb(t, f, "status", "tw-1"); exit != 0 || !strings.Contains(stdout, "resets    1\n") {
		t.Errorf("status after a reset: exit %d\n%s", exit, stdout)
	}
	stdout, _, exit = verb(t, f, "history", "tw-1")
	if exit != 0 || !strings.Contains(stdout, `reset   to=2 reason="rerun b"  | applied: took the run back to its state after seq 2`) ||
		!strings.Contains(stdout, "| superseded: superseded by the reset at seq 4") {
		t.Errorf("history after a reset: exit %d\n%s", exit, stdout)
	}
	if _, errOut, exit := verb(t, f, "reset", "tw-1", "--to", "3"); exit != 1 || !strings.Contains(errOut, "was superseded by the reset at seq 4") {
		t.Errorf("reset to a superseded input: exit %d, %q", exit, errOut)
	}
	if _, errOut, exit := verb(t, f, "reset", "tw-1", "--to-state", "a#2"); exit == 0 || !strings.Contains(errOut, "on its visit 2") {
		t.Errorf("reset to a visit the run never made: exit %d, %q", exit, errOut)
	}
}
