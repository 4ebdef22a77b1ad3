package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
)

// A run stays pinned to the revision it started on, so a redeploy that
// stops using a task does not free its workers: the unsettled runs of the
// older revisions may still invoke it. deploy says so, with their count.

// droppedTask is a task an older revision's unsettled runs may still
// invoke and the new revision no longer uses.
type droppedTask struct {
	Revision string `json:"revision"`
	Task     string `json:"task"` // task@version
	// Runs counts the revision's runs that have not settled (running,
	// waiting or paused).
	Runs int `json:"runs"`
}

// Text is the warning deploy prints.
func (t droppedTask) Text(name, newRevision string) string {
	runs := fmt.Sprintf("%d runs", t.Runs)
	if t.Runs == 1 {
		runs = "1 run"
	}
	return fmt.Sprintf("%s of %s revision %s, not settled yet, may still invoke %s, which revision %s does not use: keep a worker serving %s until they settle (jetflow list --workflow %s --revision %s)",
		runs, name, t.Revision, t.Task, newRevision, t.Task, name, t.Revision)
}

// droppedTasks lists the tasks the older revisions of d's workflow with
// unsettled runs use and d does not, by revision and task. It reads the
// run index (as list does) and each such revision.
func droppedTasks(ctx context.Context, f *fleet.Fleet, d fleet.Deployed) ([]droppedTask, error) {
	page, err := f.Client.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Workflow: d.Name}})
	if err != nil {
		return nil, err
	}
	unsettled := map[string]int{}
	for _, r := range page.Runs {
		if r.Status.Revision != d.Revision && r.Status.Status != wire.StatusRemoved && !run.Status(r.Status.Status).Terminal() {
			unsettled[r.Status.Revision]++
		}
	}
	revisions := make([]string, 0, len(unsettled))
	for rev := range unsettled {
		revisions = append(revisions, rev)
	}
	sort.Strings(revisions)
	var out []droppedTask
	for _, rev := range revisions {
		old, err := f.Registry.GetRevision(ctx, d.Name, rev)
		if err != nil {
			return nil, err
		}
		for _, t := range old.Tasks {
			if !slices.Contains(d.Tasks, registry.TaskRef{Task: t.Task, Version: t.Version}) {
				out = append(out, droppedTask{Revision: rev, Task: t.Task + "@" + t.Version, Runs: unsettled[rev]})
			}
		}
	}
	return out, nil
}
