package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

func newEvent(s streams) *cobra.Command {
	var conn connConfig
	var payload, eventID, waitState string
	var beforeStart, wait, waitSettled, asJSON bool
	cmd := &cobra.Command{
		Use:   "event RUN TYPE",
		Short: "Send an external event to a run",
		Long: "event publishes an event of TYPE to run RUN. A run waiting for TYPE (\"on\": [{\"event\": TYPE}])\n" +
			"moves on when the branch's guard holds; events that arrive while nothing waits are kept\n" +
			"for the next wait. An event for a run that has ended is refused, and so is one for a run that\n" +
			"does not exist (no record and no start in the input stream: exit 1), since the dispatchers\n" +
			"would drop it: an input sent before its run's start is never kept for it. A warning says when\n" +
			"the run waits, but not for TYPE, and lists what it waits for.\n\n" +
			"With --wait it then waits for the step that takes the event and prints what it did:\n" +
			"  moved     it took a transition (from which states to which, and the run's status)\n" +
			"  applied   the run took it without leaving its state\n" +
			"  buffered  nothing waits now: the run keeps it for its next wait\n" +
			"  held      the run is paused: it applies the event when resumed\n" +
			"  ignored   it matched no transition (not waited for, or no guard held), with the reason\n" +
			"  rejected  the run refused it (it had ended), with the reason\n" +
			"and exits 0 when moved, applied, buffered or held, 1 when ignored or rejected.\n\n" +
			"--wait-state NAME and --wait-settled do what --wait does, then follow the run on until it is\n" +
			"in state NAME (a nested state is PARENT/CHILD, as status prints it), or until it settles; they\n" +
			"print the run's status, active states and context data (with --json, as one JSON object):\n" +
			"request and response over a running workflow. --wait-state exits 0 once the run is in NAME\n" +
			"(at once if the step that took the event left it there) and 1 if the run settles first;\n" +
			"--wait-settled exits 0 when the run is done, 1 when it failed, 2 when it was cancelled or\n" +
			"terminated. A paused run is followed on until it is resumed.",
		Example: "  jetflow event order-1001 payment --payload '{\"amount\":59.98}'\n" +
			"  jetflow event order-1001 payment --payload '{\"amount\":59.98}' --wait-state ship --json",
		Args: namedArgs("RUN", "TYPE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, typ := args[0], args[1]
			var body json.RawMessage
			check := func() (err error) {
				if err := subjects.CheckEventType(typ); err != nil {
					return fmt.Errorf("argument TYPE: %w", err)
				}
				if waitState != "" && waitSettled {
					return fmt.Errorf("--wait-state and --wait-settled: give one or the other")
				}
				wait = wait || waitState != "" || waitSettled
				if wait && beforeStart {
					return fmt.Errorf("--wait and --before-start (--wait-state and --wait-settled wait too): an event stored before its run's start is dropped, so there may be no step to wait for; give one or the other")
				}
				body, err = jsonArg(s, "--payload", payload)
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, check, func(ctx context.Context, f *fleet.Fleet) error {
				if err := checkLive(ctx, s, f, id, "an event", beforeStart); err != nil {
					return err
				}
				if waitState != "" {
					if err := checkStateName(ctx, f, id, waitState); err != nil {
						return fmt.Errorf("--wait-state: %w", err)
					}
				}
				warnUnwaited(ctx, s, f, id, typ)
				var opts []client.EventOption
				if eventID != "" {
					opts = append(opts, client.EventID(eventID))
				}
				if !wait {
					if err := f.Client.SendEvent(ctx, id, typ, body, opts...); err != nil {
						return err
					}
					fmt.Fprintf(s.out, "sent %s to run %s\n", typ, id)
					return nil
				}
				w, err := f.Client.Watch(ctx, id)
				if err != nil {
					return err
				}
				defer func() { _ = w.Stop() }()
				before, _ := f.Client.Record(ctx, id) // after the watch began: nothing between is missed
				o, rec, err := sendAndFollow(ctx, w, id, typ, before, eventSender(ctx, f, id, typ, body, opts))
				if err != nil {
					return err
				}
				if !asJSON || (!waitSettled && waitState == "") {
					fmt.Fprintf(s.out, "sent %s to run %s\n%s: %s\n", typ, id, o.Verdict, o.Text)
				}
				if o.Verdict == "ignored" || o.Verdict == "rejected" {
					if asJSON && (waitSettled || waitState != "") {
						return printJSONExit(s, arrivalJSON{Run: id, Verdict: o.Verdict, Text: o.Text}, exitFailed)
					}
					return exitError{exitFailed}
				}
				if !waitSettled && waitState == "" {
					return nil
				}
				a, err := followUntil(ctx, w, id, rec, waitState)
				if err != nil {
					return err
				}
				return printArrival(s, a, o, waitState, asJSON)
			})
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().StringVar(&payload, "payload", "", "the event's payload: JSON text, @FILE, or @- for standard input (default null)")
	cmd.Flags().BoolVar(&beforeStart, "before-start", false, beforeStartUsage)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the step that takes the event and print what it did; exit 1 when the run ignored or refused it")
	cmd.Flags().StringVar(&waitState, "wait-state", "", "after the step that takes the event, follow the run until it is in state `NAME`; print its status and data; exit 1 if it settles first")
	cmd.Flags().BoolVar(&waitSettled, "wait-settled", false, "after the step that takes the event, follow the run until it settles; print its status and data; exit 0 done, 1 failed, 2 cancelled or terminated")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --wait-state or --wait-settled: print one JSON object (run, verdict, reached, status, states, data)")
	cmd.Flags().StringVar(&eventID, "id", "", "de-duplicates the event: a second event with this id for the run is dropped (make it unguessable: anyone who may publish inputs could use it first)")
	return cmd
}

// warnUnwaited warns when run id waits, but for no event of type typ:
// its wait will ignore the event.
func warnUnwaited(ctx context.Context, s streams, f *fleet.Fleet, id, typ string) {
	rec, st, err := readRun(ctx, f, id)
	if err != nil {
		return // checkLive has said what there is to say
	}
	ws, err := step.StatusOf(id, rec, st)
	if err != nil || ws.Status != wire.StatusWaiting {
		return // a running run keeps the event for its next wait
	}
	wf, err := compiledWorkflows(ctx, f)(st.Workflow, st.Revision)
	if err != nil {
		return
	}
	waits := client.WaitsFor(wf, st.Control.Active)
	if slices.Contains(strings.Split(waits, " or "), "event "+typ) {
		return
	}
	if waits == "" {
		waits = "nothing an event can end"
	}
	fmt.Fprintf(s.err, "warning: run %s waits in %s for %s, not event %s: its wait ignores it\n", id, strings.Join(mapNames(st.Control.Active), ", "), waits, typ)
}
