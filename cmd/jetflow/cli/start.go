package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Exit statuses of start --wait.
const (
	exitDone      = 0
	exitFailed    = 1
	exitCancelled = 2
	// exitInterrupted: the user stopped following; the run goes on.
	exitInterrupted = 130
)

func newStart(s streams) *cobra.Command {
	var conn connConfig
	var id, input, eventType, payload, eventID string
	var wait bool
	var ctl startControls
	var priority int
	cmd := &cobra.Command{
		Use:   "start NAME",
		Short: "Start a run of a deployed workflow and print its id",
		Long: "start publishes a start message for workflow NAME's latest deployed revision and prints\n" +
			"the run id. With --wait it follows the run: one line per state entered and task\n" +
			"settled (a live display on a terminal), then the result or the error; it exits 0\n" +
			"when the run is done, 1 when it failed and 2 when it was cancelled or terminated (a paused run\n" +
			"is followed on until it is resumed and ends). When the run has not moved for 5s, it names on\n" +
			"standard error each task in flight that no worker is pulling, with its waiting invocations\n" +
			"and how long ago a worker last took one.\n\n" +
			"With --event TYPE (and --payload) the start carries an event that the run takes in the same\n" +
			"step as its start, so that nothing sees the run without it (signal with start); when run --id\n" +
			"exists and has not ended, the event alone goes to it (exit 1 if it has ended).\n\n" +
			"Start controls (docs/STARTS.md), decided by the dispatchers for every start however it\n" +
			"comes; start then waits (up to --timeout) for the decision and says it on standard error:\n" +
			"  --idempotency-key K    a start with a key seen in the last 24 h starts nothing: start\n" +
			"                         prints the run the key started first\n" +
			"  --singleton-key K      at most one active (not settled) run per key: while another is\n" +
			"                         active the start is refused (exit 1, naming that run), or with\n" +
			"                         --singleton queue held until it settles (a message schedule the\n" +
			"                         server keeps, looked at again every 1-15 s)\n" +
			"  --debounce-key K --debounce D\n" +
			"                         the start is held for D; a later start with the key within D\n" +
			"                         replaces it, so only the last start of a burst runs, D after it\n\n" +
			"With --priority N (0 to 9) the run's task invocations go before those of lower priority\n" +
			"wherever their task version's policy queues them (docs/POLICY.md, \"Priority and fairness\");\n" +
			"without it they take the priority the policy gives.",
		Example: "  jetflow start order --input '{\"sku\":\"KB-42\",\"qty\":1,\"customer\":\"ada\"}' --wait\n" +
			"  jetflow start order --id order-1001 --input @order.json\n" +
			"  jetflow start order --id order-1001 --event payment --payload '{\"amount\":59.98}'\n" +
			"  jetflow start order --idempotency-key cart-77 --input @order.json\n" +
			"  jetflow start reindex --singleton-key tenant-4 --singleton queue\n" +
			"  jetflow start rebuild --debounce-key doc-9 --debounce 5s\n" +
			"  jetflow start order --priority 9 --input @urgent.json",
		Args: namedArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := subjects.CheckWorkflowName(name); err != nil {
				return fmt.Errorf("argument NAME: %w", err)
			}
			if id == "" {
				id = newRunID(name)
			} else if err := subjects.CheckRunID(id); err != nil {
				return fmt.Errorf("--id: %w", err)
			}
			in, err := jsonArg(s, "--input", input)
			if err != nil {
				return err
			}
			var ev *startEvent
			switch {
			case eventType != "":
				if err := subjects.CheckEventType(eventType); err != nil {
					return fmt.Errorf("--event: %w", err)
				}
				ev = &startEvent{typ: eventType, id: eventID}
				if ev.payload, err = jsonArg(s, "--payload", payload); err != nil {
					return err
				}
			case payload != "" || eventID != "":
				return fmt.Errorf("--payload and --event-id describe the event a start carries: give --event TYPE too")
			}
			opts, err := ctl.options()
			if err != nil {
				return err
			}
			var prio []client.StartOption
			if cmd.Flags().Changed("priority") {
				if priority < wire.MinPriority || priority > wire.MaxPriority {
					return fmt.Errorf("--priority: %d is outside %d to %d", priority, wire.MinPriority, wire.MaxPriority)
				}
				prio = append(prio, client.WithPriority(priority))
			}
			if len(opts) > 0 {
				return startControlled(cmd.Context(), s, &conn, name, id, in, ev, wait, append(opts, prio...))
			}
			return start(cmd.Context(), s, &conn, name, id, in, ev, wait, prio...)
		},
	}
	addConnFlags(cmd, &conn)
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the run id: letters, digits, '_' and '-' (default: NAME-<UTC date>-<time>-<random>)")
	f.StringVar(&input, "input", "", "the run input: JSON text, @FILE, or @- for standard input (default null)")
	f.BoolVar(&wait, "wait", false, "follow the run until it ends; exit 0 done, 1 failed, 2 cancelled or terminated")
	f.StringVar(&eventType, "event", "", "deliver an event of `TYPE` in the start's step (to run --id alone if it exists and has not ended)")
	f.StringVar(&payload, "payload", "", "with --event: the event's payload: JSON text, @FILE, or @- for standard input (default none)")
	f.IntVar(&priority, "priority", 0, "the run's priority, 0 to 9, where its task versions' policy queues invocations (default: the policy's)")
	f.StringVar(&eventID, "event-id", "", "with --event: de-duplicates the start and its event, as event --id does")
	ctl.flags(f)
	return cmd
}

// startEvent is the event start --event delivers with the start.
type startEvent struct {
	typ, id string
	payload json.RawMessage
}

func start(ctx context.Context, s streams, conn *connConfig, name, id string, input json.RawMessage, ev *startEvent, wait bool, opts ...client.StartOption) error {
	f, stop, err := dialDeployed(ctx, s, conn, name)
	if err != nil {
		return err
	}
	defer stop()
	if st, err := f.Client.Status(ctx, id); err == nil {
		if ev == nil {
			return fmt.Errorf("--id: run %q already exists (it is %s); choose another id", id, st.Status)
		}
		if run.Status(st.Status).Terminal() {
			fmt.Fprintf(s.err, "run %s already exists and is %s: it would refuse event %s\n", id, st.Status, ev.typ)
			return exitError{exitFailed}
		}
		if st.Workflow != name {
			return fmt.Errorf("--id: run %q exists and runs workflow %s, not %s", id, st.Workflow, name)
		}
		fmt.Fprintf(s.err, "run %s already exists (it is %s): the event goes to it alone\n", id, st.Status)
	} else if !errors.Is(err, kvstore.ErrRunNotFound) {
		return err
	}
	var w *client.RunWatch
	if wait {
		// Watch before starting, so that no step goes unseen.
		if w, err = f.Client.Watch(ctx, id); err != nil {
			return err
		}
		defer func() { _ = w.Stop() }()
	}
	if err := publishStart(ctx, f, name, id, input, ev, opts...); err != nil {
		return err
	}
	fmt.Fprintln(s.out, id)
	if !wait {
		return nil
	}
	return follow(ctx, s, f, id, w)
}

// follow shows run id's progress from w until it ends; its error is the
// exit status.
func follow(ctx context.Context, s streams, f *fleet.Fleet, id string, w *client.RunWatch) error {
	v := newView(s.out)
	noRecord := time.AfterFunc(noRecordHint, func() {
		fmt.Fprintf(s.err, "no dispatcher has taken up run %s after %s: is `jetflow serve` or `jetflow dispatcher` running with prefix %q?\n", id, noRecordHint, f.Names.Prefix())
	})
	hint := newWorkerHint(ctx, s, f, id)
	st, err := w.Follow(ctx, &client.Tracker{Workflow: compiledWorkflows(ctx, f), Result: resultReader(ctx, f)}, func(steps []client.Progress) {
		noRecord.Stop()
		hint.progress()
		v.show(steps)
	})
	noRecord.Stop()
	hint.stop()
	v.close()
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(s.err, "stopped following run %s; it goes on (see: jetflow status %s)\n", id, id)
			return exitError{exitInterrupted}
		}
		return err
	}
	return exitError{exitCode(st)}
}

// noRecordHint is how long start --wait waits for the run's first record
// before saying that no dispatcher seems to be running.
const noRecordHint = 5 * time.Second

// exitCode is start --wait's exit status for a finished run.
func exitCode(st *wire.Status) int {
	switch st.Status {
	case wire.StatusDone:
		return exitDone
	case wire.StatusFailed:
		return exitFailed
	}
	return exitCancelled
}

// newRunID makes a readable, unique run id: the workflow's name, the UTC
// time and five random characters.
func newRunID(workflow string) string {
	const alphabet = "abcdefghijkmnpqrstuvwxyz23456789" // no look-alikes
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	if len(workflow) > 64 {
		workflow = workflow[:64]
	}
	return workflow + "-" + time.Now().UTC().Format("20060102-150405") + "-" + string(b)
}

// publishStart publishes run id's start, carrying ev when not nil.
func publishStart(ctx context.Context, f *fleet.Fleet, name, id string, input json.RawMessage, ev *startEvent, opts ...client.StartOption) error {
	if ev == nil {
		return f.Client.StartRun(ctx, name, id, input, opts...)
	}
	var payload any
	if len(ev.payload) > 0 {
		payload = ev.payload
	}
	_, err := f.Client.StartWithEvent(ctx, name, id, input, ev.typ, payload, ev.id, opts...)
	return err
}

// dialDeployed opens the fleet for a start of workflow name, refusing a
// workflow that is not deployed before anything is published.
func dialDeployed(ctx context.Context, s streams, conn *connConfig, name string) (*fleet.Fleet, func(), error) {
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return nil, nil, err
	}
	if _, err := f.Registry.Get(ctx, name); err != nil {
		stop()
		if errors.Is(err, registry.ErrWorkflowNotFound) {
			return nil, nil, fmt.Errorf("workflow %q is not deployed (deploy it first: jetflow deploy)", name)
		}
		return nil, nil, err
	}
	return f, stop, nil
}
