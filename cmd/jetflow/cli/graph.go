package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/authoring"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/graph"
	"github.com/jetflow/jetflow/subjects"
)

func newGraph(s streams) *cobra.Command {
	var conn connConfig
	var format, state, revision, runID string
	cmd := &cobra.Command{
		Use:   "graph [NAME|FILE]",
		Short: "Draw a workflow's statechart or a work state's DAG as Mermaid, dot or SVG",
		Long: "graph prints a workflow's statechart (its states and transitions, nested flows as\n" +
			"clusters) or, with --state, the DAG of one work state, as Mermaid (the default),\n" +
			"Graphviz dot or SVG text.\n\n" +
			"FILE is a workflow document (- for standard input), drawn without any server. NAME\n" +
			"is a deployed workflow (its latest revision, or --revision), read over NATS; an\n" +
			"existing file wins over a name. With --run the workflow is the run's, and the run\n" +
			"is marked on it: the active state, the visited states with their visit counts, and\n" +
			"each DAG node's status and attempt.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := graph.Format(format)
			if _, err := graph.Render(&graph.Diagram{}, f); err != nil {
				return fmt.Errorf("--format: %w", err)
			}
			if len(args) == 0 && runID == "" {
				return errors.New("name a workflow document (FILE), a deployed workflow (NAME) or a run (--run RUN)")
			}
			g := graphSource{s: s, conn: &conn, revision: revision}
			var wf *workflow.Workflow
			var st *run.State
			var title string
			var err error
			switch {
			case runID != "":
				if len(args) > 0 {
					return fmt.Errorf("--run %s draws the run's own workflow: leave out %q", runID, args[0])
				}
				wf, st, title, err = g.run(cmd.Context(), runID)
			case isFile(args[0]):
				wf, title, err = g.file(args[0])
			default:
				wf, title, err = g.deployed(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			d, err := diagramOf(wf, st, state)
			if err != nil {
				return err
			}
			d.Title = title
			out, err := graph.Render(d, f)
			if err != nil {
				return err
			}
			fmt.Fprint(s.out, out)
			if !strings.HasSuffix(out, "\n") {
				fmt.Fprintln(s.out)
			}
			return nil
		},
	}
	addConnFlags(cmd, &conn)
	fs := cmd.Flags()
	fs.StringVar(&format, "format", string(graph.FormatMermaid), "mermaid, dot or svg")
	fs.StringVar(&state, "state", "", "draw this work state's DAG instead of the statechart: its id (/states/check) or name (check)")
	fs.StringVar(&revision, "revision", "", "with NAME, the deployed revision to draw (default: the latest)")
	fs.StringVar(&runID, "run", "", "draw this run's workflow with the run marked on it")
	return cmd
}

// isFile reports whether arg names a workflow document rather than a
// deployed workflow: standard input, an existing file, or anything that
// cannot be a workflow name.
func isFile(arg string) bool {
	if arg == "-" {
		return true
	}
	if _, err := os.Stat(arg); err == nil {
		return true
	}
	return subjects.CheckWorkflowName(arg) != nil
}

// graphSource finds the workflow (and run) to draw.
type graphSource struct {
	s        streams
	conn     *connConfig
	revision string
}

func (g graphSource) file(name string) (*workflow.Workflow, string, error) {
	if g.revision != "" {
		return nil, "", fmt.Errorf("--revision picks a deployed revision; %s is a file", name)
	}
	data, err := readInput(g.s, name)
	if err != nil {
		return nil, "", err
	}
	wf, err := workflow.CompileJSON(data, workflow.Options{})
	if err != nil {
		return nil, "", errors.New(authoring.Diagnose(data, err).Text(displayName(name)))
	}
	return wf, wf.Lowered.Revision, nil
}

func (g graphSource) deployed(ctx context.Context, name string) (*workflow.Workflow, string, error) {
	f, stop, err := dialFleet(ctx, g.s, g.conn)
	if err != nil {
		return nil, "", err
	}
	defer stop()
	dep, err := f.Registry.Get(ctx, name)
	if g.revision != "" {
		dep, err = f.Registry.GetRevision(ctx, name, g.revision)
	}
	if err != nil {
		return nil, "", err
	}
	wf, err := workflow.CompileJSON(dep.Doc, workflow.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("workflow %s revision %s: %s", name, dep.Revision, errorLine(err))
	}
	return wf, name + " " + dep.Revision, nil
}

func (g graphSource) run(ctx context.Context, id string) (wf *workflow.Workflow, st *run.State, title string, err error) {
	if g.revision != "" {
		return nil, nil, "", errors.New("--revision does not go with --run: a run is pinned to its revision")
	}
	err = onRun(ctx, g.s, g.conn, "--run", id, nil, func(ctx context.Context, f *fleet.Fleet) error {
		var err error
		if _, st, err = readRun(ctx, f, id); err != nil {
			return err
		}
		dep, err := f.Registry.GetRevision(ctx, st.Workflow, st.Revision)
		if err != nil {
			return fmt.Errorf("run %s is pinned to workflow %s revision %s: %w", id, st.Workflow, st.Revision, err)
		}
		if wf, err = workflow.CompileJSON(dep.Doc, workflow.Options{}); err != nil {
			return fmt.Errorf("workflow %s revision %s: %s", st.Workflow, dep.Revision, errorLine(err))
		}
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	return wf, st, fmt.Sprintf("%s %s run %s (%s)", st.Workflow, st.Revision, id, st.Status), nil
}

// diagramOf draws the statechart, or the DAG of the work state named by
// state (an id or a name), marked with st when there is a run.
func diagramOf(wf *workflow.Workflow, st *run.State, state string) (*graph.Diagram, error) {
	if state == "" {
		var m *graph.Marks
		if st != nil {
			m = graph.RunMarks(st)
		}
		return graph.Statechart(wf, m), nil
	}
	id, err := workStateID(wf, state)
	if err != nil {
		return nil, err
	}
	var marks map[string]graph.NodeMark
	if st != nil {
		marks = graph.RunDAGMarks(wf, st, id)
	}
	return graph.DAG(wf, id, marks)
}

// workStateID resolves --state: a work state id, or a name that only one
// work state has (its last segment, or segments joined by '/').
func workStateID(wf *workflow.Workflow, state string) (string, error) {
	if wf.DAGs[state] != nil {
		return state, nil
	}
	var found []string
	for _, id := range wf.Lowered.Work {
		short := strings.ReplaceAll(strings.TrimPrefix(id, "/states/"), "/flow/states/", "/")
		if short == state || id[strings.LastIndexByte(id, '/')+1:] == state {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("--state %q is not a work state (work states: %s)", state, strings.Join(wf.Lowered.Work, ", "))
	}
	return "", fmt.Errorf("--state %q names several work states (%s): give the id", state, strings.Join(found, ", "))
}
