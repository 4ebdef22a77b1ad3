package otherlang

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// TestNodeWorkerSaysItRecovered restarts the server under a running Node
// worker: the worker logs the disconnect, then that it reconnected and
// serves again, and a run started after the restart ends done.
func TestNodeWorkerSaysItRecovered(t *testing.T) {
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := natstest.Server(t) // restartable on its port and store
	url := srv.ClientURL()
	f, err := fleet.Start(ctx, fleet.Config{URL: url, Dispatcher: &dispatcher.Config{}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.Stop(ctx)
	})
	const shipOnly = `{"$workflow":"0.2","revision":"s1","initial":"ship","states":{
 "ship":{"work":{"task":"ship","version":"1"},"then":"done"},"done":{"final":true}}}`
	if _, err := f.Deploy(ctx, "ship-only", []byte(shipOnly)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot(t), "examples", "workers", "node")
	w := start(t, "node worker", dir, []string{"JETFLOW_NATS_URL=" + url, "JETFLOW_TASKS=ship@1", "JETFLOW_PULL_EXPIRES_MS=1000"}, node, "worker.js")
	waitLine := func(what string) {
		t.Helper()
		natstest.WaitFor(t, 60*time.Second, "the worker logs "+what, func() error {
			if !w.out.contains(what) {
				return errors.New("not yet")
			}
			return nil
		})
	}
	waitLine(`"msg":"serving"`)
	run := func(id string) {
		t.Helper()
		if err := f.Client.StartRun(ctx, "ship-only", id, map[string]any{"order": map[string]any{"sku": "mug", "qty": 1}}); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		st, err := f.Client.Wait(wctx, id)
		if err != nil || st.Status != wire.StatusDone {
			t.Fatalf("run %s: %+v, %v", id, st, err)
		}
	}
	run("before-restart")

	natstest.Restart(t, srv)
	waitLine(`"msg":"disconnected from NATS; reconnecting"`)
	waitLine(`"msg":"reconnected to NATS"`)
	run("after-restart")
	waitLine(`"msg":"serving again"`)
	if out := w.out.String(); strings.Index(out, `"msg":"reconnected to NATS"`) < strings.Index(out, `"msg":"disconnected from NATS`) {
		t.Errorf("reconnected logged before disconnected:\n%s", out)
	}
	if err := w.stop(t, 30*time.Second); err != nil {
		t.Errorf("node worker after SIGTERM: %v, want exit status 0", err)
	}
}
