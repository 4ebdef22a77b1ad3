package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/runrecord"
)

// starvedTasks reads the consumers of the tasks run st has in flight
// (attempts not waiting to retry) and returns those no worker is pulling.
// It is best effort: a user whose NATS permissions do not include
// consumer info sees no hint rather than an error.
func starvedTasks(ctx context.Context, f *fleet.Fleet, wf *workflow.Workflow, st *run.State, rec *runrecord.Record) []client.TaskWorkers {
	var out []client.TaskWorkers
	seen := map[string]bool{}
	for _, a := range client.InFlight(wf, st, rec) {
		if a.Waiting || a.Task == "" || seen[a.Task] {
			continue
		}
		if startsChildren(rec, a.Task) {
			continue // a child run answers it, not a worker (docs/CHILDREN.md)
		}
		seen[a.Task] = true
		task, version, ok := strings.Cut(a.Task, "@")
		if !ok {
			continue
		}
		w, err := f.Client.TaskWorkers(ctx, task, version)
		if err == nil && w.Starved() {
			out = append(out, w)
		}
	}
	return out
}

// workerHintAfter is how long start --wait sees no progress before it
// looks for tasks no worker is pulling, and how often it looks again.
const workerHintAfter = 5 * time.Second

// workerHint tells a start --wait user which tasks of the run wait for a
// worker, once per task version, after workerHintAfter without progress.
type workerHint struct {
	ctx context.Context
	s   streams
	f   *fleet.Fleet
	id  string

	mu      sync.Mutex
	timer   *time.Timer
	said    map[string]bool
	stopped bool
}

func newWorkerHint(ctx context.Context, s streams, f *fleet.Fleet, id string) *workerHint {
	h := &workerHint{ctx: ctx, s: s, f: f, id: id, said: map[string]bool{}}
	h.timer = time.AfterFunc(workerHintAfter, h.check)
	return h
}

// progress puts the next look off: the run moves.
func (h *workerHint) progress() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopped {
		h.timer.Reset(workerHintAfter)
	}
}

func (h *workerHint) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.timer.Stop()
}

func (h *workerHint) check() {
	rec, st, err := readRun(h.ctx, h.f, h.id)
	var starved []client.TaskWorkers
	if err == nil {
		var wf *workflow.Workflow
		if st.Workflow != "" {
			wf, _ = compiledWorkflows(h.ctx, h.f)(st.Workflow, st.Revision)
		}
		starved = starvedTasks(h.ctx, h.f, wf, st, rec)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	for _, w := range starved {
		if tv := w.Task + "@" + w.Version; !h.said[tv] {
			h.said[tv] = true
			fmt.Fprintf(h.s.err, "waiting for a worker: %s\n", w.Text(time.Now()))
		}
	}
	h.timer.Reset(workerHintAfter)
}
