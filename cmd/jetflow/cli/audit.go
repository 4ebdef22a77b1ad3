package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/fleet"
)

// auditPoll is how often --follow looks for new entries.
const auditPoll = time.Second

func newAudit(s streams) *cobra.Command {
	var conn connConfig
	var since time.Duration
	var runID, who string
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log: who did what through the console and the state-changing verbs",
		Long: "audit prints the entries of the audit log (stream <prefix>_audit), oldest first: every action\n" +
			"taken through the web console, accepted or refused, and every run of cancel, pause, resume,\n" +
			"terminate, redrive, reset, a bulk job's submission, jobs cancel, task pause and resume, and\n" +
			"deploy. Each says when, who (the console's authenticated user, \"anonymous\" on a console\n" +
			"without authentication, or a command's --operator, JETFLOW_OPERATOR or OS user), where from\n" +
			"(console or cli, and the console's peer address), the action and its target, whether it was\n" +
			"accepted or refused and why, and the equivalent command line.\n\n" +
			"Text lines read: TIME WHO SOURCE ACTION TARGET RESULT[: DETAIL] then the command after \"$ \".\n" +
			"--json prints one JSON object per line instead. The log keeps entries --audit-max-age (400 days\n" +
			"by default); reading it is the operator's (docs/SECURITY.md).",
		Example: "  jetflow audit --since 24h\n  jetflow audit --run order-1001 --json\n  jetflow audit --who ana --follow",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < 0 {
				return errors.New("--since must not be negative (0: the whole log)")
			}
			f, stop, err := dialFleet(cmd.Context(), s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			filter := client.AuditFilter{Run: runID, Who: who}
			if since > 0 {
				filter.Since = time.Now().Add(-since)
			}
			return printAudit(cmd.Context(), s, f, filter, follow, asJSON)
		},
	}
	addConnFlags(cmd, &conn)
	fs := cmd.Flags()
	fs.DurationVar(&since, "since", 24*time.Hour, "only entries written this long ago or later; 0 prints the whole log")
	fs.StringVar(&runID, "run", "", "only entries about this run")
	fs.StringVar(&who, "who", "", "only entries of this identity (case ignored)")
	fs.BoolVar(&follow, "follow", false, "then print new entries as they are written, until Ctrl-C")
	fs.BoolVar(&asJSON, "json", false, "one JSON object per entry and line")
	return cmd
}

func printAudit(ctx context.Context, s streams, f *fleet.Fleet, filter client.AuditFilter, follow, asJSON bool) error {
	n := 0
	err := f.Client.FollowAudit(ctx, filter, follow, clock.Real{}, auditPoll, func(r client.AuditRecord) error {
		n++
		if asJSON {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintln(s.out, string(b))
			return nil
		}
		fmt.Fprintln(s.out, auditLine(r))
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 && !follow && !asJSON {
		fmt.Fprintln(s.err, "no audit entries match")
	}
	return nil
}

// auditLine is one entry as text.
func auditLine(r client.AuditRecord) string {
	target := r.Run
	switch {
	case r.Job != "":
		target = "job " + r.Job
	case r.Task != "":
		target = "task " + r.Task
	case r.Workflow != "":
		target = "workflow " + r.Workflow
	case target == "" && r.Filter != nil:
		if b, err := json.Marshal(r.Filter); err == nil {
			target = "filter " + string(b)
		}
	}
	source := r.Source
	if r.Remote != "" {
		source += " " + r.Remote
	}
	result := r.Result
	if r.Detail != "" {
		result += ": " + r.Detail
	}
	when := r.Time
	if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
		when = t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	}
	line := strings.Join([]string{when, r.Who, source, r.Action, target, result}, "  ")
	if r.Command != "" {
		line += "  $ " + r.Command
	}
	return line
}
