package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// runJSON is a run as status --json and list --json print it: the status
// announcement's fields plus times (RFC 3339, UTC).
type runJSON struct {
	*wire.Status
	Started string `json:"started,omitempty"`
	Updated string `json:"updated,omitempty"`
	// FailedTask names the state and task a task failure of the run is
	// about, which error reports at the DAG's node.
	FailedTask *client.FailedTask `json:"failedTask,omitempty"`
}

// statusJSON is a run as status --json prints it: runJSON plus the
// refused inputs the record keeps, oldest first, as the record has them
// ({seq, kind, reason, time}, time in Unix ms).
type statusJSON struct {
	runJSON
	Rejected []runrecord.Rejection `json:"rejected,omitempty"`
	Ignored  []runrecord.Rejection `json:"ignored,omitempty"`
	// Redrives counts the redrives the run took (jetflow redrive).
	Redrives int64 `json:"redrives,omitempty"`
	// Resets counts the resets the run took (jetflow reset).
	Resets int64 `json:"resets,omitempty"`
	// Workers lists the tasks in flight that no worker is pulling.
	Workers []client.TaskWorkers `json:"workersMissing,omitempty"`
	// Archived is the tombstone of a run read from the archive.
	Archived *wire.Removed `json:"archived,omitempty"`
	// Timers are the timers the run has armed, soonest first.
	Timers []timerJSON `json:"timers,omitempty"`
	// Parent links a child run to the task attempt that started it.
	Parent *wire.Parent `json:"parent,omitempty"`
	// Children are the child runs the run started (docs/CHILDREN.md).
	Children []client.ChildNode `json:"children,omitempty"`
}

// refusalsShown is how many of the most recent refusals of each kind the
// text output lists.
const refusalsShown = 3

func newStatus(s streams) *cobra.Command {
	var conn connConfig
	var asJSON, wait, tree bool
	cmd := &cobra.Command{
		Use:   "status RUN",
		Short: "Show a run's status, state, result or error",
		Long: "status reads run RUN's record and prints its workflow and revision, status, current\n" +
			"state, the tasks in flight, the timers it has armed (when each fires and how long until\n" +
			"then), its result or error, and when it started and when its record last changed (as list\n" +
			"shows it). Every time is RFC 3339 in UTC with milliseconds, then how far from now.\n" +
			"A run id with no record whose start the dispatchers kept from starting (a duplicate\n" +
			"idempotency key, a refused, queued or debounced start, docs/STARTS.md) shows that decision\n" +
			"and the key and run it names (--json: {run, start}); exit 1 unless it is still to start.\n" +
			"It also lists the most recent inputs the run refused (rejected, or events it ignored),\n" +
			"each with its stream sequence, kind and reason; `jetflow history RUN` shows every input.\n" +
			"With --json it prints one object: run, workflow, revision, status, state, result, error,\n" +
			"time (Unix ms of the last status change), started, updated, timers ([{kind: wait, retry or\n" +
			"deadline, at, state, node}], soonest first), and rejected and ignored as the\n" +
			"record keeps them: [{seq, kind, reason, time}], oldest first, redrives and resets, how many\n" +
			"redrives and resets the run took (absent when none), and workersMissing: the tasks in flight\n" +
			"that no worker is pulling, as their consumers tell it ([{task, version, consumer, pulling,\n" +
			"pending, inHand, lastPull, paused}]; absent when none), which the text output prints as \"no\n" +
			"worker is pulling TASK@VERSION: N invocations waiting, nothing pulled for D\" (or never pulled).\n" +
			"A task's failure of the run keeps the engine's error (code, path at the DAG's node, message)\n" +
			"and adds failedTask: {state, node, task, code, message}, the work state, the task and the\n" +
			"worker's own error, which the text output's error line names: \"JF2006 /nodes/task task\n" +
			"boom@1 in state go failed (EXIT_64): bad input\".\n\n" +
			"A run removed by retention shows as \"removed by retention at T\" with the status it settled\n" +
			"with (--json: {run, status: \"removed\", removed: {at, workflow, revision, status, settled,\n" +
			"historyKept, archived, until}}) for as long as its tombstone lives. A run archived before\n" +
			"its removal (--archive of the dispatchers, or its policy) is read from the archive, while\n" +
			"the archive keeps it: its status as it was removed, under the line \"archived (removed by\n" +
			"retention at T)\" (--json: the member archived, the tombstone).\n\n" +
			"With --wait it first waits for the run to end (a paused run is waited for until it is resumed\n" +
			"and ends), then prints it, and exits as start --wait does: 0 done, 1 failed, 2 cancelled or\n" +
			"terminated.\n\n" +
			"A child run (docs/CHILDREN.md) has a parent row: the parent run, its node, task and attempt\n" +
			"(--json: parent {run, activation, node, task, version, attempt}). A run that started\n" +
			"children has a children row, how many by status; --tree lists them instead, one row each\n" +
			"(run, workflow, node, attempt, status), their own children indented below, up to 8 levels\n" +
			"(--json: children [{run, workflow, activation, node, task, version, attempt, detached,\n" +
			"status, children}], one level unless --tree). A child whose start no dispatcher has taken up\n" +
			"yet shows as starting, one retention removed as removed.",
		Args: namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				var final *wire.Status
				if wait {
					var err error
					if final, err = waitToEnd(ctx, s, f, id); err != nil {
						return err
					}
				}
				rec, st, err := readRun(ctx, f, id)
				var archived *wire.Removed
				var removed *runrecord.RemovedError
				if errors.As(err, &removed) || errors.Is(err, kvstore.ErrRunNotFound) {
					if ar, ok := readArchived(ctx, f, id); ok {
						archived = &ar.Removed
						rec, st, err = archivedRun(ar)
					}
				}
				if archived == nil && errors.As(err, &removed) {
					return printRemoved(s, removed.Removed, asJSON)
				}
				if errors.Is(err, kvstore.ErrRunNotFound) {
					if d, ok, derr := f.Client.StartDecision(ctx, id); derr == nil && ok {
						return printDecision(s, id, d, asJSON)
					}
					return fmt.Errorf("run %s not found (with prefix %q)", id, f.Names.Prefix())
				} else if err != nil {
					return err
				}
				ws, err := step.StatusOf(id, rec, st)
				if err != nil {
					return err
				}
				// Updated is when the record last changed, as list shows it;
				// an archived run has only its logical time (a cancel moves
				// no clock in the state; its announcement has the time).
				info := runJSON{Status: ws, Updated: msTime(max(st.Control.Time, ws.Time))}
				if e, err := f.Runs.GetEntry(ctx, id); archived == nil && err == nil {
					info.Updated = stamp(e.Updated)
				}
				if t, ok := startedAt(ctx, f, id); ok {
					info.Started = stamp(t)
				}
				if archived != nil && !asJSON {
					fmt.Fprintln(s.out, archivedMark(*archived))
				}
				var wf *workflow.Workflow
				if st.Workflow != "" {
					wf, _ = compiledWorkflows(ctx, f)(st.Workflow, st.Revision)
				}
				starved := starvedTasks(ctx, f, wf, st, rec)
				if archived == nil {
					info.FailedTask = failedTask(ctx, f, wf, st, rec)
				} else {
					info.FailedTask = client.FailedTaskOf(wf, st)
				}
				depth := 1
				if tree {
					depth = client.MaxTreeDepth
				}
				kids, err := f.Client.Tree(ctx, rec, depth)
				if err != nil {
					return err
				}
				if asJSON {
					if err := json.NewEncoder(s.out).Encode(statusJSON{runJSON: info, Rejected: rec.Rejected, Ignored: rec.Ignored, Redrives: st.Redrives, Resets: st.Resets, Workers: starved, Archived: archived, Timers: armedTimers(st), Parent: parentLink(rec.Parent), Children: kids}); err != nil {
						return err
					}
				} else {
					printStatus(s, wf, info, st, rec, starved)
					printFamily(s, rec.Parent, kids, tree)
				}
				if final != nil && exitCode(final) != exitDone {
					return exitError{exitCode(final)}
				}
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&tree, "tree", false, "list the run's child runs and theirs, one row each (default: a children row counting them)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to end first; exit 0 done, 1 failed, 2 cancelled or terminated")
	return cmd
}

// waitToEnd waits for run id to end and returns its final status; nil
// when the run has no record (the caller reports that), so that waiting
// never outlasts a mistyped id.
func waitToEnd(ctx context.Context, s streams, f *fleet.Fleet, id string) (*wire.Status, error) {
	if _, err := f.Client.Status(ctx, id); err != nil {
		if _, stored := startedAt(ctx, f, id); !errors.Is(err, kvstore.ErrRunNotFound) || !stored {
			return nil, nil //nolint:nilerr // the read that follows reports it
		}
		// Started, not yet taken up by a dispatcher: wait for it too.
	}
	final, err := f.Client.Wait(ctx, id)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(s.err, "stopped waiting for run %s; it goes on (see: jetflow status %s)\n", id, id)
		return nil, exitError{exitInterrupted}
	}
	return final, err
}

func printStatus(s streams, wf *workflow.Workflow, info runJSON, st *run.State, rec *runrecord.Record, starved []client.TaskWorkers) {
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	defer func() { _ = tw.Flush() }() // unreported, as each row's write
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("run", info.Run)
	row("workflow", info.Workflow+"@"+info.Revision)
	status := info.Status.Status
	if status == wire.StatusWaiting {
		if w := client.WaitsFor(wf, st.Control.Active); w != "" {
			status += " for " + w
		}
	}
	row("status", status)
	operatorRows(row, info.Status, st)
	if st.Redrives > 0 {
		row("redrives", fmt.Sprint(st.Redrives))
	}
	if st.Resets > 0 {
		row("resets", fmt.Sprint(st.Resets))
	}
	row("state", strings.Join(mapNames(st.Control.Active), ", "))
	if inFlight := client.InFlight(wf, st, rec); len(inFlight) > 0 {
		var tasks []string
		for _, a := range inFlight {
			t := fmt.Sprintf("%s (%s, attempt %d", a.Node, a.Task, a.Attempt)
			if a.Node == "task" && a.Task != "" {
				// A single-task state's node is "task" whatever its task.
				t = fmt.Sprintf("%s (attempt %d", a.Task, a.Attempt)
			}
			if a.Waiting {
				t += ", waiting to retry"
			}
			tasks = append(tasks, t+")")
		}
		row("tasks", strings.Join(tasks, ", "))
	}
	now := time.Now()
	for i, t := range armedTimers(st) {
		k := ""
		if i == 0 {
			k = "timers"
		}
		row(k, timerText(t, now))
	}
	for i, w := range starved {
		k := ""
		if i == 0 {
			k = "workers"
		}
		row(k, w.Text(time.Now()))
	}
	switch {
	case info.Error != nil && info.FailedTask != nil:
		row("error", failureText(info.Error, info.FailedTask))
	case info.Error != nil:
		row("error", errorText(info.Error))
	case info.Status.Status == wire.StatusDone:
		row("result", orNull(info.Result))
	}
	if info.Started != "" {
		t, _ := time.Parse(time.RFC3339Nano, info.Started)
		row("started", humanTime(t))
	}
	if t, err := time.Parse(time.RFC3339Nano, info.Updated); err == nil {
		row("updated", humanTime(t))
	}
	printRefused(row, "rejected", rec.Rejected)
	printRefused(row, "ignored", rec.Ignored)
}

// printRefused prints the most recent refusals of list, oldest first, one a
// row, and how many older ones the record holds.
func printRefused(row func(k, v string), key string, list []runrecord.Rejection) {
	shown := list[max(0, len(list)-refusalsShown):]
	for i, r := range shown {
		k := ""
		if i == 0 {
			k = key
		}
		row(k, fmt.Sprintf("seq %d %s: %s", r.Seq, r.Kind, replay.ReasonText(r.Reason)))
	}
	if more := len(list) - len(shown); more > 0 {
		row("", fmt.Sprintf("and %d earlier in the record (status --json lists them, history shows every input)", more))
	}
}

// startedAt is when the run's start message was stored, if the input
// stream still holds it.
func startedAt(ctx context.Context, f *fleet.Fleet, id string) (time.Time, bool) {
	stream, err := f.JS.Stream(ctx, f.Names.InputStream())
	if err != nil {
		return time.Time{}, false
	}
	m, err := kvstore.LastStart(ctx, stream, f.Names, id)
	if err != nil {
		return time.Time{}, false
	}
	return m.Time, true
}

func mapNames(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = stateName(id)
	}
	return out
}
