package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

func newReset(s streams) *cobra.Command {
	var conn connConfig
	var tokens secretConfig
	var reason, operator, toState string
	var to uint64
	var wait bool
	cmd := &cobra.Command{
		Use:   "reset RUN (--to SEQ | --to-state NAME[#VISIT])",
		Short: "Take a run back to its state after an earlier input and continue from there",
		Long: "reset asks the dispatchers to take run RUN back to the state it had right after its input at\n" +
			"stream sequence SEQ (the numbers `jetflow history RUN` prints), rebuilt from the run's own\n" +
			"history as a replay rebuilds it, and to continue from there. The inputs the run took after\n" +
			"SEQ stay in its history, marked superseded (`jetflow history` shows them so); they no longer\n" +
			"count. What the run had in flight at that point runs again: the task nodes of its work state\n" +
			"that had not succeeded are invoked again at once with a fresh retry budget, numbered above\n" +
			"every attempt the run made (a late result of a superseded attempt is refused); the timers\n" +
			"it then relied on are armed again at their deadlines (one already past fires at once) and\n" +
			"those it armed since are disarmed; events it had buffered then are buffered again. The\n" +
			"reset is an input in the run's history, so a replay reproduces it.\n\n" +
			"--to-state NAME[#VISIT] picks SEQ for you: the first input after which the run was in state\n" +
			"NAME (as `jetflow status` prints it, pay/wait for state wait of sub-flow pay, or its id) on\n" +
			"its VISIT-th visit, by default its last visit. Superseded inputs are not counted. A state\n" +
			"the run passed through within one step (a choice) is never the state after an input.\n\n" +
			"A settled run (done, failed, cancelled, terminated) can be reset: that is how to rerun it\n" +
			"from a step. Refused, with the reason recorded (status and history show it) and exit 1: a\n" +
			"paused run (resume it first); a SEQ that is not an input the run took, that a reset\n" +
			"superseded, or that is its latest input; a point at which the run had settled or was\n" +
			"paused; a history trimmed (MaxAge, retention, --migrate-inputs) or that no longer rebuilds\n" +
			"the run's record. It prints the run's status once a dispatcher took the reset; with --wait\n" +
			"it then waits for the run to end and exits 0 done, 1 failed, 2 cancelled or terminated\n" +
			"(docs/OPERATIONS.md#reset).",
		Example: "  jetflow reset order-1001 --to 7 --reason 'rerun from the price check'\n" +
			"  jetflow reset order-1001 --to-state pay/wait --wait\n" +
			"  jetflow reset order-1001 --to-state check#2",
		Args: namedArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			var signer *token.Signer
			check := func() (err error) {
				if (to == 0) == (toState == "") {
					return errors.New("give exactly one of --to SEQ and --to-state NAME[#VISIT]")
				}
				if toState != "" {
					if _, _, err := parseToState(toState); err != nil {
						return err
					}
				}
				signer, err = tokens.signer()
				return err
			}
			return onRun(cmd.Context(), s, &conn, "argument RUN", id, check, func(ctx context.Context, f *fleet.Fleet) error {
				err := reset(ctx, s, f, conn, signer, id, to, toState, reason, operatorOrEnv(operator), false)
				err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "reset", Run: id, Reason: reason}, err)
				if err != nil || !wait {
					return err
				}
				return followToEnd(ctx, s, f, id)
			})
		},
	}
	addConnFlags(cmd, &conn)
	addSecretFlags(cmd, &tokens) // --to-state replays the history, which screens results by their tokens
	addOperatorFlags(cmd, &reason, &operator, "why the run is reset, for the record")
	cmd.Flags().Uint64Var(&to, "to", 0, "the stream sequence of the input whose state the run goes back to (`jetflow history RUN` lists them)")
	cmd.Flags().StringVar(&toState, "to-state", "", "go back to the input after which the run entered state NAME, on visit VISIT (default: its last)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the reset run to end; exit 0 done, 1 failed, 2 cancelled or terminated")
	return cmd
}

// parseToState reads --to-state NAME[#VISIT] (VISIT 0: the last visit).
func parseToState(v string) (string, int, error) {
	name, visit, hasVisit := strings.Cut(v, "#")
	if name == "" {
		return "", 0, fmt.Errorf("--to-state %q names no state (NAME[#VISIT])", v)
	}
	if !hasVisit {
		return name, 0, nil
	}
	n, err := strconv.Atoi(visit)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("--to-state %q: the visit after # is a number from 1 (NAME[#VISIT])", v)
	}
	return name, n, nil
}

func reset(ctx context.Context, s streams, f *fleet.Fleet, conn connConfig, signer *token.Signer, id string, to uint64, toState, reason, operator string, wait bool) error {
	st, err := f.Client.Status(ctx, id)
	switch {
	case errors.Is(err, kvstore.ErrRunNotFound):
		return fmt.Errorf("run %s has no record: there is nothing to reset (check the id and --prefix)", id)
	case err != nil:
		return err
	case st.Status == wire.StatusPaused:
		fmt.Fprintf(s.err, "run %s is paused: resume it first (a reset would drop the inputs it holds)\n", id)
		return exitError{exitFailed}
	}
	if toState != "" {
		name, visit, _ := parseToState(toState)
		src := replay.Source{JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs, Settings: step.Settings{Tokens: signer}}
		if to, err = replay.Entry(ctx, src, id, name, visit); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "--to-state %s is input %d (the same as: jetflow reset %s --to %d)\n", toState, to, id, to)
	}
	seq, err := f.Client.Reset(ctx, id, to, reason, operator)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	after, err := f.Client.Resetted(tctx, id, seq)
	if errors.Is(err, client.ErrResetRefused) {
		fmt.Fprintln(s.err, err)
		return exitError{exitFailed}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "run %s reset to its state after input %d (reset input %d): %s in %s\n", id, to, seq, after.Status, stateName(after.State))
	if !wait {
		return nil
	}
	return followToEnd(ctx, s, f, id)
}
