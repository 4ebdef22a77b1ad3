package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// mendDoc runs one task that fails until the test fixes its worker.
const mendDoc = `{"$workflow":"0.2","revision":"m1","initial":"a","states":{
 "a":{"work":{"task":"mend","version":"1"},"then":"b"},"b":{"final":true}}}`

// TestRedriveVerb: redrive refuses a run that is not failed, continues a
// failed one once its worker is fixed (--wait follows it to its end), and
// status counts the redrive.
func TestRedriveVerb(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	if _, err := f.Deploy(ctx, "mend", []byte(mendDoc)); err != nil {
		t.Fatal(err)
	}
	var fixed atomic.Bool
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Register("mend", "1", func(context.Context, worker.Invocation) (any, error) {
		if !fixed.Load() {
			return nil, worker.NonRetryable(errors.New("not yet"))
		}
		return "mended", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })

	if out, _, exit := runEnv(t, nil, "", "redrive", "--help"); exit != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("redrive --help: exit %d, %q", exit, out)
	}
	if _, errOut, exit := verb(t, f, "redrive", "nobody"); exit == 0 || !strings.Contains(errOut, "run nobody has no record") {
		t.Errorf("redrive of a run that does not exist: exit %d, %q", exit, errOut)
	}
	if err := f.Client.StartRun(ctx, "mend", "mend-1", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, "mend-1", wire.StatusFailed)
	if _, errOut, exit := verb(t, f, "redrive", "mend-1", "--to-revision", "nope"); exit == 0 || !strings.Contains(errOut, "--to-revision nope of workflow mend") {
		t.Errorf("redrive to a revision never deployed: exit %d, %q", exit, errOut)
	}
	// A redrive that fails again names the state and task it failed in.
	stdout, errOut, exit := verb(t, f, "redrive", "mend-1", "--reason", "too soon", "--wait")
	if exit != 1 || !strings.HasSuffix(stdout, "failed in a\nerror JF2006 /nodes/task task mend@1 in state a failed: not yet\n") {
		t.Fatalf("redrive --wait failing again: exit %d, stdout %q, stderr %q", exit, stdout, errOut)
	}
	fixed.Store(true)
	stdout, errOut, exit = verb(t, f, "redrive", "mend-1", "--reason", "fixed", "--to-revision", "latest", "--wait")
	if exit != 0 || !strings.HasPrefix(stdout, "run mend-1 redriven (input ") || !strings.HasSuffix(stdout, "done in b\nresult \"mended\"\n") {
		t.Fatalf("redrive --wait: exit %d, stdout %q, stderr %q", exit, stdout, errOut)
	}
	if _, errOut, exit := verb(t, f, "redrive", "mend-1"); exit == 0 || !strings.Contains(errOut, "run mend-1 is done: only a failed run can be redriven") {
		t.Errorf("redrive of a done run: exit %d, %q", exit, errOut)
	}
	if stdout, _, exit := verb(t, f, "status", "mend-1"); exit != 0 || !strings.Contains(stdout, "redrives  2\n") {
		t.Errorf("status after a redrive: exit %d\n%s", exit, stdout)
	}
	if stdout, _, exit := verb(t, f, "history", "mend-1"); exit != 0 || !strings.Contains(stdout, `redrive  reason="fixed"`) {
		t.Errorf("history after a redrive: exit %d\n%s", exit, stdout)
	}
}
