package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/wire"
)

// schedule update: change a schedule's definition in place
// (docs/SCHEDULES.md#update).

// scheduleUpdateFlags are the definition flags update takes, each applied
// only when given.
var scheduleUpdateFlags = []string{"workflow", "cron", "every", "time-zone", "input", "jitter", "overlap", "catch-up"}

func newScheduleUpdate(s streams) *cobra.Command {
	var conn connConfig
	var want wire.Schedule
	var input string
	cmd := &cobra.Command{
		Use:   "update NAME [--workflow W] [--cron EXPR | --every D] [--time-zone TZ] [--input JSON] [--jitter D] [--overlap P] [--catch-up P]",
		Short: "Change a schedule's times, input, workflow or policies",
		Long: "update changes schedule NAME: only the flags given change, the rest stay; --cron replaces an\n" +
			"interval and --every a cron expression (and its time zone); --jitter 0 removes the jitter.\n" +
			"The new definition is what every fire taken from now on acts by, fires already stored\n" +
			"included, and what a waiting buffer-one start starts with. A paused schedule stays paused.\n\n" +
			"The next fire: when the times change (cron, interval, time zone), or the schedule is an\n" +
			"interval (the server counts an interval from the moment the definition is stored), the\n" +
			"schedule is re-armed as by resume: the next fire is computed from now, and fires made before\n" +
			"the update and not yet taken start no run. A cron schedule whose times stay keeps its next\n" +
			"fire, and its stored fires start runs with the new definition.\n\n" +
			"A waiting buffer-one start keeps waiting, and is judged at its next look (within 15s) by the\n" +
			"new --overlap: allow starts it, skip drops it unless the previous run has settled.\n\n" +
			"Refused (exit 1): an unknown schedule, a workflow not deployed. No flag, or a bad cron\n" +
			"expression, interval or policy, is an error (exit 2) naming the field.",
		Example: "  jetflow schedule update nightly --cron '30 2 * * *'\n" +
			"  jetflow schedule update poll --input '{\"full\":true}' --overlap allow\n" +
			"  jetflow schedule update hourly --workflow order-v2 --jitter 0",
		Args: namedArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			given := false
			for _, name := range scheduleUpdateFlags {
				given = given || fl.Changed(name)
			}
			if !given {
				return errors.New("schedule update: give at least one of --workflow, --cron, --every, --time-zone, --input, --jitter, --overlap, --catch-up")
			}
			if fl.Changed("cron") && fl.Changed("every") {
				return errors.New("schedule update: give --cron or --every, not both")
			}
			var in json.RawMessage
			if fl.Changed("input") {
				var err error
				if in, err = jsonArg(s, "--input", input); err != nil {
					return err
				}
			}
			var change schedule.Change
			for flag, field := range map[string]**string{
				"workflow": &change.Workflow, "cron": &change.Cron, "every": &change.Every, "time-zone": &change.TimeZone,
				"jitter": &change.Jitter, "overlap": &change.Overlap, "catch-up": &change.CatchUp,
			} {
				if fl.Changed(flag) {
					v, _ := fl.GetString(flag)
					*field = &v
				}
			}
			if fl.Changed("input") {
				change.Input = in
				if change.Input == nil {
					change.Input = []byte("null")
				}
			}
			return onSchedules(cmd, s, &conn, func(ctx context.Context, f *fleet.Fleet, store *schedule.Store) error {
				var before wire.Schedule
				var err error
				if fl.Changed("workflow") {
					_, err = f.Registry.Latest(ctx, want.Workflow)
					if errors.Is(err, registry.ErrWorkflowNotFound) {
						err = fmt.Errorf("--workflow: workflow %q is not deployed (jetflow workflows lists them; jetflow deploy adds one): %w", want.Workflow, err)
					}
				}
				var info *schedule.Info
				if err == nil {
					info, err = store.Update(ctx, args[0], operatorIdentity(cmd), func(def *wire.Schedule) {
						before = *def
						change.Apply(def)
					})
				}
				if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "schedule-update", Workflow: want.Workflow, Schedule: args[0]}, err); err != nil {
					return scheduleRefusal(s, err)
				}
				fmt.Fprintf(s.out, "schedule %s updated: %s, runs of %s\n", info.Def.Name, info.Describe(), info.Def.Workflow)
				switch {
				case info.Def.Paused:
					fmt.Fprintf(s.out, "still paused (jetflow schedule resume %s)\n", info.Def.Name)
				case schedule.Rearms(before, info.Def):
					fmt.Fprintln(s.out, "re-armed: fires made before now start no run")
				default:
					fmt.Fprintln(s.out, "times unchanged: fires already stored start runs with the new definition")
				}
				printNextFires(s, info, time.Now())
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	f := cmd.Flags()
	f.StringVar(&want.Workflow, "workflow", "", "the deployed workflow each fire starts a run of from now on")
	f.StringVar(&want.Cron, "cron", "", "new times: a cron expression (5 fields, 6 with seconds first, or @hourly ...)")
	f.StringVar(&want.Every, "every", "", "new times: an interval in whole seconds, at least 1s")
	f.StringVar(&want.TimeZone, "time-zone", "", "the IANA time zone --cron is read in (\"\" for UTC)")
	f.StringVar(&input, "input", "", "every run's input from now on: JSON, @FILE or @- (null for none)")
	f.StringVar(&want.Jitter, "jitter", "", "delay each run by up to this long (0 removes the jitter)")
	f.StringVar(&want.Overlap, "overlap", "", "while the previous run has not settled: skip, buffer-one or allow")
	f.StringVar(&want.CatchUp, "catch-up", "", "fires taken late start: none, one (the latest) or all")
	return cmd
}
