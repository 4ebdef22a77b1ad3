package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/wire"
)

// The operator's verbs on one run: pause, resume, terminate
// (docs/OPERATIONS.md).

// operatorVerb is one of the operator's verbs on a run: one run, or a
// bulk job over the runs filter flags match.
type operatorVerb struct {
	use, short, long, example string
	// operation names the verb's row in client.Operations.
	operation  string
	reasonHelp string
	// reasonRequired refuses an empty --reason before anything is sent.
	reasonRequired bool
	// check refuses a run the operation cannot apply to, saying why.
	check func(ctx context.Context, s streams, f *fleet.Fleet, id string) error
	// send publishes the operation for one run.
	send func(ctx context.Context, f *fleet.Fleet, id, reason, operator string) error
	// sent is what the verb prints once the request is published.
	sent func(id string) string
}

func (v operatorVerb) command(s streams) *cobra.Command {
	var conn connConfig
	var reason, operator string
	bulk := bulkOp{operation: v.operation, conn: &conn}
	cmd := &cobra.Command{
		Use: v.use, Short: v.short, Long: v.long, Example: v.example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if v.reasonRequired && strings.TrimSpace(reason) == "" {
				return errors.New("--reason is required: say why the run is ended")
			}
			id, err := singleRun(cmd, s, args, &bulk, reason)
			if id == "" {
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
				err := v.check(ctx, s, f, id)
				if err == nil {
					err = v.send(ctx, f, id, reason, operatorOrEnv(operator))
				}
				if err == nil {
					fmt.Fprintln(s.out, v.sent(id))
				}
				return recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: v.operation, Run: id, Reason: reason}, err)
			})
		},
	}
	addConnFlags(cmd, &conn)
	addOperatorFlags(cmd, &reason, &operator, v.reasonHelp)
	bulk.addFlags(cmd)
	return cmd
}

func newPause(s streams) *cobra.Command {
	return operatorVerb{
		use:   "pause (RUN | filter flags)",
		short: "Pause a run: no task is invoked and no timer fires until it is resumed",
		long: "pause publishes a pause request for run RUN. Once a dispatcher applies it the run's status is\n" +
			"paused (status shows since when): it invokes no task and fires no timer, and every event,\n" +
			"task result and timer fire that reaches it is held, in arrival order, for its resume. Tasks\n" +
			"already running go on and their results are kept. Only a running or waiting run can be\n" +
			"paused; cancel and terminate still act on a paused run.\n\n" +
			"With filter flags instead of RUN it submits a bulk job (see `jetflow cancel --help`): each\n" +
			"matching running or waiting run gets one pause; the others are counted as skipped.",
		example: "  jetflow pause order-1001 --reason 'payment provider down' --operator ana\n" +
			"  jetflow pause --workflow order --state pay --reason 'payment provider down' --yes",
		operation:  "pause",
		reasonHelp: "why the run is paused, for the record",
		check: func(ctx context.Context, s streams, f *fleet.Fleet, id string) error {
			return checkStatus(ctx, s, f, id, "a pause", wire.StatusPaused, "already paused")
		},
		send: func(ctx context.Context, f *fleet.Fleet, id, reason, operator string) error {
			return f.Client.Pause(ctx, id, reason, operator)
		},
		sent: func(id string) string {
			return fmt.Sprintf("pause of run %s requested (see: jetflow status %s)", id, id)
		},
	}.command(s)
}

func newResume(s streams) *cobra.Command {
	return operatorVerb{
		use:   "resume (RUN | filter flags)",
		short: "Resume a paused run: what it held applies in order",
		long: "resume publishes a resume request for the paused run RUN. The dispatcher that applies it\n" +
			"applies the inputs the run held, in the order they arrived and each at its own time (a timer\n" +
			"that came due while paused fires at once; a result that came before its attempt's deadline\n" +
			"fire counts), then the run goes on. A run that is not paused is refused.\n\n" +
			"With filter flags instead of RUN it submits a bulk job (see `jetflow cancel --help`): each\n" +
			"matching paused run gets one resume; the others are counted as skipped.",
		example: "  jetflow resume order-1001\n" +
			"  jetflow resume --workflow order --status paused --yes",
		operation:  "resume",
		reasonHelp: "why the run is resumed, for the record",
		check: func(ctx context.Context, _ streams, f *fleet.Fleet, id string) error {
			st, err := f.Client.Status(ctx, id)
			switch {
			case errors.Is(err, kvstore.ErrRunNotFound):
				return fmt.Errorf("run %s not found (with prefix %q)", id, f.Names.Prefix())
			case err != nil:
				return err
			case st.Status != wire.StatusPaused:
				return fmt.Errorf("run %s is %s, not paused: there is nothing to resume", id, st.Status)
			}
			return nil
		},
		send: func(ctx context.Context, f *fleet.Fleet, id, reason, operator string) error {
			return f.Client.Resume(ctx, id, reason, operator)
		},
		sent: func(id string) string { return fmt.Sprintf("resume of run %s requested", id) },
	}.command(s)
}

func newTerminate(s streams) *cobra.Command {
	return operatorVerb{
		use:   "terminate (RUN | filter flags) --reason TEXT",
		short: "End a run at once, status terminated, running nothing more",
		long: "terminate publishes a terminate request for run RUN. The dispatcher that applies it ends the\n" +
			"run at once with status terminated and the reason: no catch runs, tasks in flight are\n" +
			"abandoned (their results are refused, as for any settled run), held and buffered inputs are\n" +
			"dropped and its timers are removed. It acts on a paused run too. Unlike cancel, which is the\n" +
			"workflow format's cancellation, terminate is the operator's hard stop and must say why.\n\n" +
			"With filter flags instead of RUN it submits a bulk job (see `jetflow cancel --help`): each\n" +
			"matching run that has not ended gets one terminate; the others are counted as skipped.",
		example: "  jetflow terminate order-1001 --reason 'duplicate order, refunded by hand'\n" +
			"  jetflow terminate --workflow order --revision r1 --status waiting --reason 'retired' --yes",
		operation:      "terminate",
		reasonHelp:     "why the run is ended (required); status shows it",
		reasonRequired: true,
		check: func(ctx context.Context, s streams, f *fleet.Fleet, id string) error {
			return checkLive(ctx, s, f, id, "a terminate", false)
		},
		send: func(ctx context.Context, f *fleet.Fleet, id, reason, operator string) error {
			return f.Client.Terminate(ctx, id, reason, operator)
		},
		sent: func(id string) string { return fmt.Sprintf("terminate of run %s requested", id) },
	}.command(s)
}

// singleRun returns the RUN argument of an operation verb, or "" when the
// verb was given filter flags instead (then bulk carried it out, and err
// is its outcome) or neither.
func singleRun(cmd *cobra.Command, s streams, args []string, bulk *bulkOp, reason string) (string, error) {
	if handled, err := bulk.handle(cmd, s, args, reason); handled {
		return "", err
	}
	if len(args) == 0 {
		return "", fmt.Errorf("missing argument RUN, or filter flags (usage: %s)", cmd.UseLine())
	}
	return args[0], nil
}

func addOperatorFlags(cmd *cobra.Command, reason, operator *string, reasonHelp string) {
	cmd.Flags().StringVar(reason, "reason", "", reasonHelp)
	cmd.Flags().StringVar(operator, "operator", "", "who asks, for the record: status and the audit log show it (env JETFLOW_OPERATOR; the audit log falls back to the OS user)")
}

// checkStatus is checkLive that also refuses a run already in status
// refused, saying so.
func checkStatus(ctx context.Context, s streams, f *fleet.Fleet, id, what, refused, says string) error {
	if err := checkLive(ctx, s, f, id, what, false); err != nil {
		return err
	}
	st, err := f.Client.Status(ctx, id)
	if err == nil && st.Status == refused {
		return fmt.Errorf("run %s is %s", id, says)
	}
	return nil
}

// operatorRows prints what an operator set on a run: since when it is
// paused and what it holds, or why it was terminated.
func operatorRows(row func(k, v string), ws *wire.Status, st *run.State) {
	var who string
	if ws.Operator != "" {
		who = " by " + ws.Operator
	}
	switch ws.Status {
	case wire.StatusPaused:
		row("paused", humanTime(time.UnixMilli(int64(ws.Since)))+who)
		if len(st.Held) > 0 {
			row("held", fmt.Sprintf("%d inputs for its resume", len(st.Held)))
		}
	case wire.StatusTerminated:
		row("terminated", humanTime(time.UnixMilli(int64(ws.Since)))+who)
	default:
		return
	}
	if ws.Reason != "" {
		row("reason", ws.Reason)
	}
}
