package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
)

func init() { register(newDeploy) }

// deployedTask is one task a deployed workflow invokes, and where its
// workers bind.
type deployedTask struct {
	Task     string `json:"task"`
	Version  string `json:"version"`
	Subject  string `json:"subject"`
	Consumer string `json:"consumer"`
	Stream   string `json:"stream"`
}

type deployReport struct {
	Name     string         `json:"name"`
	Revision string         `json:"revision"`
	Hash     string         `json:"hash"`
	Deployed time.Time      `json:"deployed"`
	Tasks    []deployedTask `json:"tasks"`
}

func newDeploy(s streams) *cobra.Command {
	var (
		conn   connConfig
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "deploy NAME FILE",
		Short: "Validate a workflow document and deploy it under NAME",
		Long: "deploy validates a jaren-workflow 0.2 document (FILE, or - for standard input) as the\n" +
			"engine will run it, stores it as NAME's latest revision and creates the durable consumer\n" +
			"of every task it invokes. It prints the revision, the document's hash and, for each task,\n" +
			"the subject and consumer its workers serve.\n\n" +
			"An invalid document exits 1 with each error as CODE PATH message, as validate prints it;\n" +
			"so does a different document under a revision already deployed (revisions never change).\n" +
			"It connects to --nats (default " + defaultNATSURL + ", where `jetflow serve` listens).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, file := args[0], args[1]
			if err := subjects.CheckWorkflowName(name); err != nil {
				return fmt.Errorf("NAME: %w", err)
			}
			data, err := readInput(s, file)
			if err != nil {
				return err
			}
			if line := invalidLine(data); line != "" {
				fmt.Fprintln(s.out, line)
				return exitError{1}
			}
			ctx := cmd.Context()
			f, err := conn.open(ctx, openOptions{})
			if err != nil {
				return err
			}
			defer stopQuietly(f)
			ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
			defer cancel()
			d, err := f.Deploy(ctx, name, data)
			if errors.Is(err, kvstore.ErrRevisionImmutable) {
				fmt.Fprintf(s.out, "JF0021 /revision revision %q of workflow %q is already deployed with a different document (revisions never change: give the changed document a new revision)\n", docRevision(data), name)
				return exitError{1}
			}
			if err != nil {
				return err
			}
			return printDeployment(s, f, d, asJSON)
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deployment as JSON")
	return cmd
}

// invalidLine is the engine's refusal of a document as CODE PATH message,
// or "" when the document is deployable.
func invalidLine(data []byte) string {
	doc, err := value.Decode(data, value.Limits{})
	if err != nil {
		return errorLine(fault.Wrap(fault.JF0021, "workflow must be JSON", "", err))
	}
	if _, err := fleet.Validate(doc); err != nil {
		var pe *fleet.PathError
		if errors.As(err, &pe) {
			return fmt.Sprintf("%s %s %v", fault.JF0021, pe.Path, pe.Err)
		}
		return errorLine(err)
	}
	return ""
}

// docRevision is the "revision" member of a valid document.
func docRevision(data []byte) string {
	doc, _ := value.Decode(data, value.Limits{})
	obj, _ := doc.(map[string]any)
	rev, _ := obj["revision"].(string)
	return rev
}

func printDeployment(s streams, f *fleet.Fleet, d kvstore.Deployment, asJSON bool) error {
	r := deployReport{Name: d.Name, Revision: d.Revision, Hash: d.Hash, Deployed: d.Deployed.UTC(), Tasks: []deployedTask{}}
	for _, t := range d.Tasks {
		r.Tasks = append(r.Tasks, deployedTask{
			Task: t.Task, Version: t.Version, Subject: f.Names.Task(t.Task, t.Version),
			Consumer: f.Names.TaskConsumer(t.Task, t.Version), Stream: f.Names.TaskStream(),
		})
	}
	if asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(s.out, "deployed %s revision %s\nhash %s\n", r.Name, r.Revision, r.Hash)
	if len(r.Tasks) == 0 {
		fmt.Fprintln(s.out, "tasks: none")
		return nil
	}
	fmt.Fprintf(s.out, "workers serve these tasks (consumers on stream %s):\n", f.Names.TaskStream())
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSUBJECT\tCONSUMER")
	for _, t := range r.Tasks {
		fmt.Fprintf(tw, "%s@%s\t%s\t%s\n", t.Task, t.Version, t.Subject, t.Consumer)
	}
	return tw.Flush()
}

// stopQuietly closes a client verb's fleet; a client has nothing to drain
// that matters once its answer is printed.
func stopQuietly(f *fleet.Fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.Stop(ctx)
}
