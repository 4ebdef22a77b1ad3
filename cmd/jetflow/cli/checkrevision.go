package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// revisionCheck is how check-revision and deploy --check pick runs and
// judge them.
type revisionCheck struct {
	runs            int
	since, status   string
	allowDivergence bool
	tokens          secretConfig
}

func (c *revisionCheck) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&c.runs, "runs", 1000, "check the N runs of the workflow started last (settled or not)")
	f.StringVar(&c.since, "since", "", "check every run of the workflow started within this duration (90m) or since this RFC 3339 time, instead of --runs")
	f.StringVar(&c.status, "status", "", "check only runs in this status (waiting, running, done, ...): --status waiting checks the runs a migration could move")
	f.BoolVar(&c.allowDivergence, "allow-divergence", false, "exit 0 even when runs diverge or cannot be checked")
	addSecretFlags(cmd, &c.tokens)
}

// revisionReport is the check's JSON output.
type revisionReport struct {
	Workflow string            `json:"workflow"`
	Revision string            `json:"revision"`
	Runs     []replay.RunCheck `json:"runs"`
	Summary  revisionSummary   `json:"summary"`
}

type revisionSummary struct {
	Checked  int `json:"checked"`
	Same     int `json:"same"`
	Diverges int `json:"diverges"`
	Fails    int `json:"fails"`
	// Movable counts the runs found the same that have not ended: those
	// `jetflow migrate` may move.
	Movable int `json:"movable"`
	// Millis is how long reading and replaying took.
	Millis int64 `json:"millis"`
}

// check judges the chosen runs of workflow name against doc (with pol)
// and prints the report; it returns exitError{1} when a run diverges or
// fails and divergence is not allowed.
func (c *revisionCheck) check(ctx context.Context, s streams, f *fleet.Fleet, name string, doc []byte, pol *policy.Policy, asJSON bool) error {
	if c.runs <= 0 && c.since == "" {
		return fmt.Errorf("--runs %d: give a positive number of runs, or --since", c.runs)
	}
	signer, err := c.tokens.signer()
	if err != nil {
		return err
	}
	if signer == nil {
		if signer, err = token.Load(ctx, f.JS, f.Names); err != nil {
			return fmt.Errorf("the deployment's token secret, which the histories' results are checked with: %w", err)
		}
	}
	cand, err := replay.Candidate(ctx, f.Registry, run.Options{}, name, doc, pol)
	if err != nil {
		return err
	}
	opts := client.ListOptions{Filter: wire.RunFilter{Workflow: name, Status: c.status}, Sort: client.SortStart, Scan: true}
	if c.since != "" {
		if opts.Filter.StartedAfter, err = timeFlag("--since", c.since, time.Now()); err != nil {
			return err
		}
	} else {
		opts.Limit = c.runs
	}
	page, err := f.Client.ListRuns(ctx, opts)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(page.Runs))
	for _, r := range page.Runs {
		ids = append(ids, r.Status.Run)
	}
	began := time.Now()
	src := replay.Source{JS: f.JS, Names: f.Names, Registry: f.Registry, Runs: f.Runs, Settings: step.Settings{Tokens: signer}, RunOptions: run.Options{}}
	checks, err := replay.CheckRevision(ctx, src, cand, ids)
	if err != nil {
		return err
	}
	rep := revisionReport{Workflow: name, Revision: cand.Revision, Runs: checks}
	rep.Summary.Millis = time.Since(began).Milliseconds()
	for _, v := range checks {
		rep.Summary.Checked++
		switch v.Verdict {
		case replay.CheckSame:
			rep.Summary.Same++
			if v.Status == wire.StatusWaiting || v.Status == wire.StatusRunning {
				rep.Summary.Movable++
			}
		case replay.CheckDiverges:
			rep.Summary.Diverges++
		default:
			rep.Summary.Fails++
		}
	}
	if asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printRevisionReport(s, rep)
	}
	if (rep.Summary.Diverges > 0 || rep.Summary.Fails > 0) && !c.allowDivergence {
		return exitError{1}
	}
	return nil
}

func printRevisionReport(s streams, rep revisionReport) {
	for _, v := range rep.Runs {
		head := fmt.Sprintf("run %s (%s, %s):", v.Run, orAbsent(v.Revision), orAbsent(v.Status))
		switch v.Verdict {
		case replay.CheckSame:
			fmt.Fprintf(s.out, "%s same (%d inputs)\n", head, v.Inputs)
		case replay.CheckDiverges:
			fmt.Fprintf(s.out, "%s %s\n", head, v.Divergence.Text())
		default:
			fmt.Fprintf(s.out, "%s fails: %s\n", head, v.Error)
		}
	}
	sum := rep.Summary
	rate := ""
	if sum.Millis > 0 && sum.Checked > 0 {
		rate = fmt.Sprintf(", %.0f runs a minute", float64(sum.Checked)*60000/float64(sum.Millis))
	}
	fmt.Fprintf(s.out, "checked %d run%s of %s against revision %s in %s%s: %d same (%d waiting or running may move), %d diverge, %d fail\n",
		sum.Checked, plural(sum.Checked), rep.Workflow, rep.Revision, time.Duration(sum.Millis)*time.Millisecond, rate, sum.Same, sum.Movable, sum.Diverges, sum.Fails)
}

func newCheckRevision(s streams) *cobra.Command {
	var (
		conn       connConfig
		chk        revisionCheck
		asJSON     bool
		policyFile string
	)
	cmd := &cobra.Command{
		Use:   "check-revision NAME FILE [--runs N | --since D] [--policy POLICY.json] [--json]",
		Short: "Replay recent runs of a workflow under a new revision, offline, and report which would diverge",
		Long: "check-revision replays the histories of recent runs of workflow NAME (settled and not,\n" +
			"the --runs N started last, 1000 unless told, or every run started --since D; --status S only\n" +
			"those in status S) through the\n" +
			"document FILE (with --policy, as deploy would store it) without deploying it, and compares\n" +
			"them input by input with the same histories under the revisions the runs are pinned to\n" +
			"(docs/REVISIONS.md defines what must match). For each run it prints one line:\n" +
			"  same (N inputs);\n" +
			"  diverges at input K (seq, kind): state X under its revision, Y under the other, and what\n" +
			"  differs (a JSON Pointer into the run's state with both values, or the task invocations\n" +
			"  one side makes and the other does not);\n" +
			"  fails: why the run cannot be judged (no record, a trimmed history, an error).\n" +
			"A summary line ends the report: how many are the same, how many of those are waiting or\n" +
			"running (those `jetflow migrate` may move), how many diverge or fail, and the time taken.\n" +
			"It exits 1 when any run diverges or fails, unless --allow-divergence; --json prints\n" +
			"{workflow, revision, runs: [{run, revision, status, verdict, inputs, divergence, error}],\n" +
			"summary} for CI.\n\n" +
			"The histories are read in one pass of an ordered consumer over the input stream (nothing\n" +
			"the dispatchers consume is touched) and records by direct reads; results are checked\n" +
			"against the deployment's token secret, read from the workflow bucket unless given.",
		Example: "  jetflow check-revision order examples/order.json --runs 500\n" +
			"  jetflow check-revision order order-v2.json --since 24h --json",
		Args: namedArgs("NAME", "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, file := args[0], args[1]
			if err := subjects.CheckWorkflowName(name); err != nil {
				return fmt.Errorf("NAME: %w", err)
			}
			data, pol, err := readCandidate(s, file, policyFile, asJSON)
			if err != nil {
				return err
			}
			f, stop, err := dialFleet(cmd.Context(), s, &conn)
			if err != nil {
				return err
			}
			defer stop()
			return chk.check(cmd.Context(), s, f, name, data, pol, asJSON)
		},
	}
	addConnFlags(cmd, &conn)
	chk.addFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&policyFile, "policy", "", "the tasks' retry and timeout policy the revision would be deployed with (JSON; - for standard input)")
	return cmd
}

// readCandidate reads a document and its policy as deploy does, and
// refuses an invalid one the way deploy prints it (exit 1).
func readCandidate(s streams, file, policyFile string, asJSON bool) ([]byte, *policy.Policy, error) {
	if file == "-" && policyFile == "-" {
		return nil, nil, errors.New("FILE and --policy cannot both be - (standard input): give one of them as a file")
	}
	data, err := readInput(s, file)
	if err != nil {
		return nil, nil, err
	}
	if d := invalidDocument(data); d != nil {
		if asJSON {
			return nil, nil, printJSONExit(s, map[string]any{"error": d}, 1)
		}
		fmt.Fprintln(s.out, d.Text(displayName(file)))
		return nil, nil, exitError{1}
	}
	var pol *policy.Policy
	if policyFile != "" {
		if pol, err = readPolicy(s, policyFile); err != nil {
			var pe *policy.Error
			if errors.As(err, &pe) {
				fmt.Fprintln(s.out, policyLine(pe))
				return nil, nil, exitError{1}
			}
			return nil, nil, err
		}
	}
	return data, pol, nil
}
