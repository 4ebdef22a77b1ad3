package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
)

// TestStartsReadNoRevisionListWhileRunning: a running dispatcher follows
// the latest revisions with a watch, so starts read nothing from the
// registry, and a later deploy reaches new starts.
func TestStartsReadNoRevisionListWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t).withEngine(t, map[string]string{"one": oneTask}, registry.TaskRef{Task: "echo", Version: "1"})
	reg := &countingRegistry{Registry: b.reg}
	d, err := New(b.js, nil, reg, Config{Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	l := d.loader.(*registry.Loader)
	latestIs := func(rev string) {
		t.Helper()
		natstest.WaitFor(t, 10*time.Second, "the watch at "+rev, func() error {
			if got, ok := l.CachedLatest("one"); !ok || got != rev {
				return fmt.Errorf("latest %q, %v", got, ok)
			}
			return nil
		})
	}
	latestIs("one/1")
	b.serveTask(t, "echo", "1", echoUpper)
	// One at a time: concurrent first starts may each compile the revision.
	for i := range 3 {
		b.startTask(t, fmt.Sprintf("r%d", i), i)
		b.waitStatus(t, fmt.Sprintf("r%d", i), wire.StatusDone, 10*time.Second)
	}
	if reg.latest.Load() != 0 || reg.get.Load() != 0 || reg.getRevision.Load() != 1 {
		t.Errorf("3 starts read the revision list %d times, the latest deployment %d times, a revision %d times; want 0, 0, 1",
			reg.latest.Load(), reg.get.Load(), reg.getRevision.Load())
	}
	if _, err := b.reg.Deploy(ctx, "one", []byte(strings.Replace(oneTask, `"one/1"`, `"one/2"`, 1))); err != nil {
		t.Fatal(err)
	}
	latestIs("one/2")
	b.startTask(t, "after", 0)
	if rec := b.waitStatus(t, "after", wire.StatusDone, 10*time.Second); rec.Status.Revision != "one/2" {
		t.Errorf("a start after the deploy ran %s", rec.Status.Revision)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.CachedLatest("one"); ok {
		t.Error("the watch outlived Stop")
	}
}
