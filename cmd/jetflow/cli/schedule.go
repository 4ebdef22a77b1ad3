package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/wire"
)

// schedule create|list|pause|resume|trigger|delete: runs started at cron
// times or intervals by JetStream message schedules (docs/SCHEDULES.md).

func newSchedule(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Start runs of a workflow at cron times or fixed intervals",
		Long: "A schedule starts runs of a deployed workflow at the times of a cron expression or every\n" +
			"interval. The NATS server fires it (a JetStream message schedule in the stream\n" +
			"<prefix>_schedules); any running dispatcher starts the fire's run, whose id is the schedule's\n" +
			"name and the fire time (nightly-20261202T000000Z), so a fire that comes twice starts one run.\n" +
			"docs/SCHEDULES.md gives the exact semantics of overlap, catch-up and jitter.",
		Args: namedArgs(),
	}
	cmd.AddCommand(newScheduleCreate(s), newScheduleList(s), newSchedulePause(s), newScheduleResume(s),
		newScheduleTrigger(s), newScheduleDelete(s))
	return cmd
}

// refuse prints err and exits 1: the deployment refused the request (an
// unknown schedule or workflow, a name in use).
func refuse(s streams, err error) error {
	fmt.Fprintf(s.err, "jetflow: %v\n", err)
	return exitError{1}
}

// onSchedules dials the deployment, opens the schedule store and calls do.
func onSchedules(cmd *cobra.Command, s streams, conn *connConfig, do func(ctx context.Context, f *fleet.Fleet, store *schedule.Store) error) error {
	f, stop, err := dialFleet(cmd.Context(), s, conn)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(cmd.Context(), conn.Timeout)
	defer cancel()
	store, err := schedule.Open(ctx, f.JS, f.Names)
	if err != nil {
		return err
	}
	return do(ctx, f, store)
}

// scheduleRefusal is err as the verbs report it: exit 1 for what the
// deployment refused, the error itself otherwise.
func scheduleRefusal(s streams, err error) error {
	if errors.Is(err, schedule.ErrNotFound) || errors.Is(err, schedule.ErrExists) || errors.Is(err, registry.ErrWorkflowNotFound) {
		return refuse(s, err)
	}
	return err
}

func newScheduleCreate(s streams) *cobra.Command {
	var conn connConfig
	var def wire.Schedule
	var input string
	cmd := &cobra.Command{
		Use:   "create NAME --workflow W (--cron EXPR | --every D)",
		Short: "Create a schedule: runs of a workflow at cron times or every interval",
		Long: "create stores schedule NAME, active at once. Each fire starts a run of the deployed workflow\n" +
			"--workflow (its latest revision when the run starts) with --input, under the id NAME-<fire\n" +
			"time> (NAME-20261202T150000Z).\n\n" +
			"--cron takes 5 fields (minute hour day-of-month month day-of-week; the second is 0), 6\n" +
			"(second first) or @yearly, @monthly, @weekly, @daily, @hourly; fields take *, lists (1,5),\n" +
			"ranges (1-5), steps (*/15) and month and day names (jan, mon). They are read in --time-zone\n" +
			"(UTC by default). --every takes whole seconds, at least 1s; it counts from the moment the\n" +
			"schedule is stored.\n\n" +
			"--overlap says what a fire does while the schedule's previous run has not settled: skip (start\n" +
			"nothing), buffer-one (hold one start, started when that run settles; later fires start\n" +
			"nothing meanwhile) or allow. --catch-up says which fires taken late (no dispatcher was running\n" +
			"when they were due, or the NATS server itself was down) start runs: none, one (the latest) or\n" +
			"all. --jitter delays each run by up to D, by an amount derived from NAME and the fire time.\n\n" +
			"Refused (exit 1): a name in use, a workflow not deployed. A bad cron expression names the field.",
		Example: "  jetflow schedule create nightly --workflow report --cron '0 2 * * *' --time-zone Europe/Paris\n" +
			"  jetflow schedule create poll --workflow sync --every 30s --input '{\"full\":false}' --overlap buffer-one\n" +
			"  jetflow schedule create hourly --workflow order --cron @hourly --jitter 5m --catch-up all",
		Args: namedArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			def.Name = args[0]
			in, err := jsonArg(s, "--input", input)
			if err != nil {
				return err
			}
			def.Input = in
			def.By = operatorIdentity(cmd)
			if _, err := schedule.Validate(&def); err != nil {
				return err
			}
			return onSchedules(cmd, s, &conn, func(ctx context.Context, f *fleet.Fleet, store *schedule.Store) error {
				_, err := f.Registry.Latest(ctx, def.Workflow)
				if errors.Is(err, registry.ErrWorkflowNotFound) {
					err = fmt.Errorf("--workflow: workflow %q is not deployed (jetflow workflows lists them; jetflow deploy adds one): %w", def.Workflow, err)
				}
				var info *schedule.Info
				if err == nil {
					info, err = store.Create(ctx, def)
				}
				if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: "schedule-create", Workflow: def.Workflow, Schedule: def.Name}, err); err != nil {
					return scheduleRefusal(s, err)
				}
				fmt.Fprintf(s.out, "schedule %s created: %s, runs of %s\n", info.Def.Name, info.Describe(), info.Def.Workflow)
				printNextFires(s, info, time.Now())
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	f := cmd.Flags()
	f.StringVar(&def.Workflow, "workflow", "", "the deployed workflow each fire starts a run of (required)")
	f.StringVar(&def.Cron, "cron", "", "a cron expression: 5 fields, 6 (second first) or @hourly, @daily ...")
	f.StringVar(&def.Every, "every", "", "an interval in whole seconds, at least 1s (30s, 5m, 24h)")
	f.StringVar(&def.TimeZone, "time-zone", "", "the IANA time zone --cron is read in (default UTC)")
	f.StringVar(&input, "input", "", "every run's input: JSON, @FILE or @- (default null)")
	f.StringVar(&def.Jitter, "jitter", "", "delay each run by up to this long, derived from the name and fire time (default none)")
	f.StringVar(&def.Overlap, "overlap", wire.OverlapSkip, "while the previous run has not settled: skip, buffer-one or allow")
	f.StringVar(&def.CatchUp, "catch-up", wire.CatchUpOne, "fires taken late start: none, one (the latest) or all")
	_ = cmd.MarkFlagRequired("workflow")
	return cmd
}

// printNextFires prints a schedule's next three fires.
func printNextFires(s streams, info *schedule.Info, now time.Time) {
	next := info.Next(now, 3)
	if len(next) == 0 {
		fmt.Fprintln(s.out, "next fires: none (paused)")
		return
	}
	parts := make([]string, len(next))
	for i, t := range next {
		parts[i] = when(t, now)
	}
	fmt.Fprintln(s.out, "next fires: "+strings.Join(parts, ", "))
}

func newScheduleList(s streams) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the schedules with their next fire, their last run and its status",
		Long: "list prints one line per schedule, by name: its times, its workflow, its policies, whether it\n" +
			"is paused, its next fire (computed as the server computes it), its last run and that run's\n" +
			"status, and how many runs it started and fires it skipped (overlap, catch-up).",
		Example: "  jetflow schedule list",
		Args:    namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onSchedules(cmd, s, &conn, func(ctx context.Context, f *fleet.Fleet, store *schedule.Store) error {
				infos, err := store.List(ctx)
				if err != nil {
					return err
				}
				if len(infos) == 0 {
					fmt.Fprintln(s.out, "no schedules (jetflow schedule create adds one)")
					return nil
				}
				now := time.Now()
				tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tWHEN\tWORKFLOW\tOVERLAP\tCATCH-UP\tJITTER\tNEXT FIRE\tLAST RUN\tSTATUS\tSTARTED\tSKIPPED")
				for _, info := range infos {
					next := "paused"
					if n := info.Next(now, 1); len(n) == 1 {
						next = when(n[0], now)
					}
					last, status := info.State.LastRun, ""
					if last == "" {
						last = "-"
					} else if st, err := f.Client.Status(ctx, last); err == nil {
						status = st.Status
					} else {
						status = "unknown"
					}
					jitter := info.Def.Jitter
					if jitter == "" {
						jitter = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", info.Def.Name, info.Describe(), info.Def.Workflow,
						info.Def.Overlap, info.Def.CatchUp, jitter, next, last, status, info.State.Started, info.State.Skipped)
				}
				return tw.Flush()
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

// scheduleVerb is pause, resume or delete of one schedule.
func scheduleVerb(s streams, use, short, long, action string, do func(ctx context.Context, store *schedule.Store, name, by string) (string, error)) *cobra.Command {
	var conn connConfig
	cmd := &cobra.Command{
		Use: use + " NAME", Short: short, Long: long,
		Example: "  jetflow schedule " + use + " nightly",
		Args:    namedArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onSchedules(cmd, s, &conn, func(ctx context.Context, f *fleet.Fleet, store *schedule.Store) error {
				out, err := do(ctx, store, args[0], operatorIdentity(cmd))
				if err = recordAudit(ctx, s, cmd, args, f, wire.AuditEntry{Action: action, Schedule: args[0]}, err); err != nil {
					return scheduleRefusal(s, err)
				}
				fmt.Fprintln(s.out, out)
				return nil
			})
		},
	}
	addConnFlags(cmd, &conn)
	return cmd
}

func newSchedulePause(s streams) *cobra.Command {
	return scheduleVerb(s, "pause", "Stop a schedule's fires until it is resumed",
		"pause stores schedule NAME as paused: the server fires it no more, and fires made before are\n"+
			"dropped by the dispatchers that take them. Runs it started go on. Pausing a paused schedule\n"+
			"does nothing. Refused (exit 1): an unknown schedule.",
		"schedule-pause", func(ctx context.Context, store *schedule.Store, name, by string) (string, error) {
			_, err := store.Pause(ctx, name, by)
			return "schedule " + name + " paused (jetflow schedule resume " + name + ")", err
		})
}

func newScheduleResume(s streams) *cobra.Command {
	return scheduleVerb(s, "resume", "Make a paused schedule fire again",
		"resume makes schedule NAME fire again from now on; the fires it missed while paused are not\n"+
			"caught up (an interval counts from the resume). Resuming an active schedule does nothing.\n"+
			"Refused (exit 1): an unknown schedule.",
		"schedule-resume", func(ctx context.Context, store *schedule.Store, name, by string) (string, error) {
			info, err := store.Resume(ctx, name, by)
			if err != nil {
				return "", err
			}
			out := "schedule " + name + " resumed"
			if next := info.Next(time.Now(), 1); len(next) == 1 {
				out += "; next fire " + humanTime(next[0])
			}
			return out, nil
		})
}

func newScheduleTrigger(s streams) *cobra.Command {
	return scheduleVerb(s, "trigger", "Start one run of a schedule now",
		"trigger asks for one run of schedule NAME now, outside its times, and prints its id\n"+
			"(NAME-manual-<time>). A dispatcher starts it whatever the schedule's overlap policy and even\n"+
			"while the schedule is paused; it becomes the schedule's last run, which later fires' overlap\n"+
			"is judged against. Refused (exit 1): an unknown schedule.",
		"schedule-trigger", func(ctx context.Context, store *schedule.Store, name, by string) (string, error) {
			return store.Trigger(ctx, name, by)
		})
}

func newScheduleDelete(s streams) *cobra.Command {
	return scheduleVerb(s, "delete", "Delete a schedule: no more fires",
		"delete removes schedule NAME: its definition (the server fires it no more), fires not yet\n"+
			"taken, pending jitter delays and its state. Runs it started are left alone. Refused (exit 1):\n"+
			"an unknown schedule.",
		"schedule-delete", func(ctx context.Context, store *schedule.Store, name, _ string) (string, error) {
			return "schedule " + name + " deleted", store.Delete(ctx, name)
		})
}
