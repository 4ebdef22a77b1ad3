package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/authoring"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// deployedTask is one task a deployed workflow invokes, and where its
// workers bind.
type deployedTask struct {
	Task     string `json:"task"`
	Version  string `json:"version"`
	Subject  string `json:"subject"`
	Consumer string `json:"consumer"`
	Stream   string `json:"stream"`
	// Retry, StartToClose and the timeouts are the task's resolved
	// policy: what its runs retry with, its consumer's AckWait, and when
	// an attempt (or all of a node's attempts) fails with TASK_TIMEOUT.
	Retry           taskRetry `json:"retry"`
	StartToClose    string    `json:"startToClose"`
	AttemptTimeout  string    `json:"attemptTimeout"`
	ScheduleToClose string    `json:"scheduleToClose,omitempty"`
	// MaxConcurrency is the task version's attempts in flight at most
	// (its consumer's MaxAckPending); RatePerSecond and RateBurst its
	// start rate, absent when none (docs/POLICY.md#concurrency-and-rate-limits).
	MaxConcurrency int     `json:"maxConcurrency"`
	RatePerSecond  float64 `json:"ratePerSecond,omitempty"`
	RateBurst      int     `json:"rateBurst,omitempty"`
}

// taskRetry is a resolved retry policy, durations as Go prints them.
type taskRetry struct {
	MaxAttempts       int      `json:"maxAttempts"`
	InitialInterval   string   `json:"initialInterval"`
	MaxInterval       string   `json:"maxInterval"`
	Multiplier        float64  `json:"multiplier"`
	NonRetryableCodes []string `json:"nonRetryableCodes"`
}

type deployReport struct {
	Name     string         `json:"name"`
	Revision string         `json:"revision"`
	Hash     string         `json:"hash"`
	Deployed time.Time      `json:"deployed"`
	Policy   *policy.Policy `json:"policy,omitempty"`
	Tasks    []deployedTask `json:"tasks"`
	// Notes are changes other deployments see (a task consumer's AckWait).
	Notes []string `json:"notes,omitempty"`
	// Dropped are the tasks unsettled runs of older revisions may still
	// invoke that this revision does not use.
	Dropped []droppedTask `json:"dropped,omitempty"`
	// Children are the task versions the policy binds to a workflow: they
	// run as child runs, have no consumer and are not in Tasks.
	Children []deployedChild `json:"children,omitempty"`
}

// deployedChild is a task version that runs as a child workflow
// (docs/CHILDREN.md).
type deployedChild struct {
	Task     string `json:"task"`
	Version  string `json:"version"`
	Workflow string `json:"workflow"`
	Cascade  bool   `json:"cascade"`
}

func newDeploy(s streams) *cobra.Command {
	var (
		conn        connConfig
		asJSON      bool
		policyFile  string
		triggerFile string
		check       bool
		chk         revisionCheck
	)
	cmd := &cobra.Command{
		Use:   "deploy NAME FILE [--policy POLICY.json] [--check [--runs N|--since D] [--allow-divergence]]",
		Short: "Validate a workflow document and deploy it under NAME",
		Long: "deploy validates a jaren-workflow 0.2 document (FILE, or - for standard input) as the\n" +
			"engine will run it, stores it as NAME's latest revision and creates the durable consumer\n" +
			"of every task it invokes. It prints the revision, the document's hash and, for each task,\n" +
			"the subject and consumer its workers serve. A task version the policy's \"$children\" binds\n" +
			"to a workflow runs as a child workflow (docs/CHILDREN.md): no worker serves it, so deploy\n" +
			"makes no consumer for it and prints the workflow it starts instead. Runs stay pinned to the revision they started on:\n" +
			"for each task that runs of an older revision, not settled yet, may still invoke and this\n" +
			"revision does not use, a warning on standard error names the revision, the task and how many\n" +
			"such runs there are (--json: dropped [{revision, task, runs}]), so that its workers keep\n" +
			"serving until those runs settle.\n\n" +
			"--policy POLICY.json deploys the tasks' retry and timeout policy with the document: a\n" +
			"JSON object mapping \"task@version\", \"task\" or \"*\" to {\"maxAttempts\", \"initialInterval\",\n" +
			"\"maxInterval\", \"multiplier\", \"nonRetryableCodes\", \"startToClose\", \"attemptTimeout\",\n" +
			"\"scheduleToClose\"} (docs/POLICY.md). It is part of the revision, as the document is;\n" +
			"startToClose becomes the task consumer's AckWait, and an attempt with no accepted result\n" +
			"within attemptTimeout (default 10m) fails with TASK_TIMEOUT.\n" +
			"An invalid policy exits 1 with POLICY PATH message.\n\n" +
			"An invalid document exits 1 with its error as validate prints it (FILE:LINE:COLUMN: CODE\n" +
			"PATH: reason); a different document under a revision already deployed exits 1 with\n" +
			"CODE PATH message (revisions never change). With --json a refused document prints\n" +
			"{\"error\": {code, path, message, line, column, source_path, reason, hint}} as validate does.\n\n" +
			"--check first replays recent runs of NAME under the document, as `jetflow check-revision`\n" +
			"does (--runs, --since, --allow-divergence and its report, a JSON object of its own before the\n" +
			"deployment's with --json), and deploys nothing, exiting 1, when a run diverges or fails\n" +
			"unless --allow-divergence.\n" +
			"It connects to --nats (default " + defaultNATSURL + ", where `jetflow serve` listens).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, file := args[0], args[1]
			if err := subjects.CheckWorkflowName(name); err != nil {
				return fmt.Errorf("NAME: %w", err)
			}
			if file == "-" && policyFile == "-" {
				return errors.New("FILE and --policy cannot both be - (standard input): give one of them as a file")
			}
			data, err := readInput(s, file)
			if err != nil {
				return err
			}
			if d := invalidDocument(data); d != nil {
				if asJSON {
					return printJSONExit(s, map[string]any{"error": d}, 1)
				}
				fmt.Fprintln(s.out, d.Text(displayName(file)))
				return exitError{1}
			}
			var pol *policy.Policy
			if policyFile != "" {
				if pol, err = readPolicy(s, policyFile); err != nil {
					var pe *policy.Error
					if errors.As(err, &pe) {
						fmt.Fprintln(s.out, policyLine(pe))
						return exitError{1}
					}
					return err
				}
			}
			ctx := cmd.Context()
			// The deploy prints what it changes (notes); the fleet's log of it
			// would only repeat that on standard error.
			f, err := conn.open(ctx, openOptions{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return err
			}
			defer stopQuietly(f)
			if check {
				if err := chk.check(ctx, s, f, name, data, pol, asJSON); err != nil {
					if errors.As(err, new(exitError)) {
						fmt.Fprintf(s.err, "not deployed: runs of %s diverge or cannot be checked under this revision (--allow-divergence deploys anyway)\n", name)
					}
					return err
				}
			}
			triggers, err := readTriggers(s, triggerFile, name, f)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
			defer cancel()
			d, err := f.DeployWith(ctx, name, data, fleet.DeployOptions{Policy: pol})
			if err == nil && triggers != nil {
				err = storeTriggers(ctx, s, f, name, triggers, asJSON)
			}
			e := wire.AuditEntry{Action: "deploy", Workflow: name}
			if err == nil {
				e.Detail = "revision " + d.Revision
			}
			_ = recordAudit(ctx, s, cmd, args, f, e, err)
			if errors.Is(err, registry.ErrRevisionImmutable) {
				fmt.Fprintln(s.out, immutableLine(ctx, f, name, data))
				return exitError{1}
			}
			if pe := (*policy.Error)(nil); errors.As(err, &pe) {
				// A binding the registry refused (docs/CHILDREN.md): where in which file.
				fmt.Fprintf(s.out, "%s (in %s)\n", policyLine(pe), displayName(policyFile))
				return exitError{1}
			}
			if err != nil {
				return err
			}
			dropped, err := droppedTasks(ctx, f, d)
			if err != nil {
				fmt.Fprintf(s.err, "warning: deployed, but the runs of older revisions could not be read to check the tasks this revision stops using: %v\n", err)
			}
			return printDeployment(s, f, d, dropped, asJSON)
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deployment, or the document's error, as JSON")
	cmd.Flags().StringVar(&triggerFile, "triggers", "", "the workflow's trigger file (JSON; docs/TRIGGERS.md): subjects and webhooks that start its runs or send them events; it replaces the workflow's triggers (a subject's stream is made before deploy returns, so what is published after is kept), and an empty file removes them")
	cmd.Flags().StringVar(&policyFile, "policy", "", "the tasks' retry and timeout policy file (JSON; - for standard input)")
	cmd.Flags().BoolVar(&check, "check", false, "first replay recent runs under the document (check-revision) and deploy only if none diverges")
	chk.addFlags(cmd)
	return cmd
}

// readPolicy reads and parses a policy file.
func readPolicy(s streams, file string) (*policy.Policy, error) {
	data, err := readInput(s, file)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	return policy.Parse(data)
}

// policyLine is a refused policy as POLICY PATH message, PATH a JSON
// Pointer into the policy file, printed as two single quotes for its
// root (as validate prints document paths).
func policyLine(pe *policy.Error) string {
	ptr := pe.Pointer
	if ptr == "" {
		ptr = "''"
	}
	return fmt.Sprintf("POLICY %s %s", ptr, pe.Reason)
}

// immutableLine explains a refused redeploy of a revision: its document
// changed, or only its policy did.
func immutableLine(ctx context.Context, f *fleet.Fleet, name string, data []byte) string {
	rev := docRevision(data)
	what, fix := "document", "give the changed document a new revision"
	if old, err := f.Registry.GetRevision(ctx, name, rev); err == nil {
		doc, _ := value.Decode(data, value.Limits{})
		if canon, err := value.Canonical(doc); err == nil && canon == string(old.Doc) {
			what, fix = "policy", "runs pinned to it replay under its policy: deploy the new policy with a new revision of the document"
		}
	}
	return fmt.Sprintf("%s /revision revision %q of workflow %q is already deployed with a different %s (revisions never change: %s)", fault.JF0021, rev, name, what, fix)
}

// invalidDocument is the refusal of a document as validate reports it,
// or nil when it is deployable.
func invalidDocument(data []byte) *authoring.Diagnostic {
	doc, err := value.Decode(data, value.Limits{})
	if err != nil {
		d := authoring.Diagnose(data, fault.Wrap(fault.JF0021, "workflow must be JSON", "", err))
		return &d
	}
	if _, err := fleet.Validate(doc); err != nil {
		var pe *fleet.PathError
		if errors.As(err, &pe) {
			d := authoring.At(data, string(fault.JF0021), pe.Path, pe.Err.Error())
			return &d
		}
		d := authoring.Diagnose(data, err)
		return &d
	}
	return nil
}

// docRevision is the "revision" member of a valid document.
func docRevision(data []byte) string {
	doc, _ := value.Decode(data, value.Limits{})
	obj, _ := doc.(map[string]any)
	rev, _ := obj["revision"].(string)
	return rev
}

func printDeployment(s streams, f *fleet.Fleet, d fleet.Deployed, dropped []droppedTask, asJSON bool) error {
	r := deployReport{Name: d.Name, Revision: d.Revision, Hash: d.Hash, Deployed: d.Deployed.UTC(), Policy: d.Policy, Tasks: []deployedTask{}, Notes: d.Notes, Dropped: dropped}
	for _, c := range d.Children {
		r.Children = append(r.Children, deployedChild{Task: c.Task, Version: c.Version, Workflow: c.Workflow, Cascade: c.Cascade})
	}
	for _, t := range d.Tasks {
		if slices.ContainsFunc(d.Children, func(c fleet.ChildTask) bool { return c.TaskRef == t }) {
			continue
		}
		rp := d.Policy.Retry(t.Task, t.Version)
		stc := d.Policy.StartToClose(t.Task, t.Version)
		if stc == 0 {
			stc = f.TaskPolicy().StartToClose
		}
		to := d.Policy.Timeouts(t.Task, t.Version)
		r.Tasks = append(r.Tasks, deployedTask{
			Task: t.Task, Version: t.Version, Subject: f.Names.Task(t.Task, t.Version),
			Consumer: f.Names.TaskConsumer(t.Task, t.Version), Stream: f.Names.TaskStream(),
			Retry: taskRetry{
				MaxAttempts: rp.MaxAttempts, Multiplier: rp.Multiplier, NonRetryableCodes: append([]string{}, rp.NonRetryableCodes...),
				InitialInterval: msDuration(rp.InitialIntervalMs), MaxInterval: msDuration(rp.MaxIntervalMs),
			},
			StartToClose:   stc.String(),
			AttemptTimeout: msDuration(to.AttemptMs),
		})
		if to.ScheduleToCloseMs > 0 {
			r.Tasks[len(r.Tasks)-1].ScheduleToClose = msDuration(to.ScheduleToCloseMs)
		}
		lim := d.Policy.Limits(t.Task, t.Version)
		if lim.MaxConcurrency == 0 {
			lim.MaxConcurrency = f.TaskPolicy().MaxAckPending
		}
		r.Tasks[len(r.Tasks)-1].MaxConcurrency, r.Tasks[len(r.Tasks)-1].RatePerSecond, r.Tasks[len(r.Tasks)-1].RateBurst = lim.MaxConcurrency, lim.RatePerSecond, lim.RateBurst
	}
	if asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(s.out, "deployed %s revision %s\nhash %s\n", r.Name, r.Revision, r.Hash)
	if r.Policy != nil {
		fmt.Fprintf(s.out, "policy %s\n", r.Policy.Canonical())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(s.out, "note: %s\n", n)
	}
	for _, t := range r.Dropped {
		fmt.Fprintf(s.err, "warning: %s\n", t.Text(r.Name, r.Revision))
	}
	for _, c := range r.Children {
		how := "the parent's cancel, terminate, pause and resume reach it"
		if !c.Cascade {
			how = "detached (cascade false)"
		}
		fmt.Fprintf(s.out, "task %s@%s runs as a child workflow: each invocation starts a run of %s (%s); no worker serves it, no consumer\n", c.Task, c.Version, c.Workflow, how)
	}
	if len(r.Tasks) == 0 {
		if len(r.Children) == 0 {
			fmt.Fprintln(s.out, "tasks: none")
		} else {
			fmt.Fprintln(s.out, "tasks for workers: none")
		}
		return nil
	}
	fmt.Fprintf(s.out, "workers serve these tasks (consumers on stream %s):\n", f.Names.TaskStream())
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSUBJECT\tCONSUMER")
	for _, t := range r.Tasks {
		fmt.Fprintf(tw, "%s@%s\t%s\t%s\n", t.Task, t.Version, t.Subject, t.Consumer)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Policy == nil {
		return nil
	}
	fmt.Fprintln(s.out, "their policy (attempts, backoff, start-to-close, attempt timeout, codes never retried):")
	tw = tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tATTEMPTS\tBACKOFF\tSTART-TO-CLOSE\tTIMEOUT\tNON-RETRYABLE")
	for _, t := range r.Tasks {
		rt := t.Retry
		codes := strings.Join(rt.NonRetryableCodes, ",")
		if codes == "" {
			codes = "-"
		}
		timeout := t.AttemptTimeout
		if t.ScheduleToClose != "" {
			timeout += " (all " + t.ScheduleToClose + ")"
		}
		fmt.Fprintf(tw, "%s@%s\t%d\t%s x%v up to %s\t%s\t%s\t%s\n", t.Task, t.Version, rt.MaxAttempts, rt.InitialInterval, rt.Multiplier, rt.MaxInterval, t.StartToClose, timeout, codes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Tasks {
		if t.MaxConcurrency != f.TaskPolicy().MaxAckPending || t.RatePerSecond > 0 {
			rate := "no rate limit"
			if t.RatePerSecond > 0 {
				rate = fmt.Sprintf("at most %g starts/s (burst %d)", t.RatePerSecond, t.RateBurst)
			}
			fmt.Fprintf(s.out, "limits: %s@%s at most %d attempts in flight, %s\n", t.Task, t.Version, t.MaxConcurrency, rate)
		}
	}
	return nil
}

// msDuration prints milliseconds as a Go duration.
func msDuration(ms float64) string {
	return time.Duration(ms * float64(time.Millisecond)).String()
}
