package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/authoring"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/sim"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

func newValidate(s streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a workflow document; print each error as FILE:LINE:COLUMN: CODE PATH: reason",
		Long: "validate compiles a jaren-workflow 0.2 document exactly as the engine will run it.\n" +
			"It exits 0 with a one-line summary, or 1 with the error as a compiler prints one:\n" +
			"FILE:LINE:COLUMN: CODE PATH: reason (hint) [reference path P]. PATH is a JSON Pointer\n" +
			"into the author's document ('' for its root, - for none); where the reference's\n" +
			"path points elsewhere (into the lowered statechart, a DAG, a scope) it follows in\n" +
			"brackets. With --json it prints {\"error\": {code, path, message, line, column,\n" +
			"source_path, reason, hint}}: code, path and message exactly as the reference gives them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(s, args[0])
			if err != nil {
				return err
			}
			wf, err := workflow.CompileJSON(data, workflow.Options{})
			if err != nil {
				d := authoring.Diagnose(data, err)
				if asJSON {
					return printJSONExit(s, map[string]any{"error": d}, 1)
				}
				fmt.Fprintln(s.out, d.Text(displayName(args[0])))
				return exitError{1}
			}
			if asJSON {
				return printJSONExit(s, map[string]any{"ok": summary(wf)}, 0)
			}
			fmt.Fprintln(s.out, summary(wf))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}

// displayName is how a diagnostic names the document read from name.
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// printJSONExit prints v as one JSON line and exits with code.
func printJSONExit(s streams, v any, code int) error {
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, string(out))
	if code != 0 {
		return exitError{code}
	}
	return nil
}

// errorLine is one error as CODE PATH message.
func errorLine(err error) string {
	path := "-"
	if p, ok := fault.PathOf(err); ok {
		path = p
		if p == "" {
			path = "''"
		}
	}
	reason := err.Error()
	var fe *fault.Error
	if errors.As(err, &fe) {
		reason = fe.Reason
	}
	code := string(fault.CodeOf(err))
	if code == "" {
		code = string(fault.JF0021)
	}
	return code + " " + path + " " + reason
}

func summary(wf *workflow.Workflow) string {
	tasks := map[string]bool{}
	for _, id := range wf.Lowered.Work {
		for _, node := range wf.DAGs[id].Nodes() {
			if info, _ := wf.DAGs[id].Node(node); info.Task != "" {
				tasks[info.Task+"@"+info.Version] = true
			}
		}
	}
	names := make([]string, 0, len(tasks))
	for t := range tasks {
		names = append(names, t)
	}
	sort.Strings(names)
	return fmt.Sprintf("ok: revision %s, %d states, %d work states, tasks: %s",
		wf.Lowered.Revision, len(wf.Lowered.States), len(wf.Lowered.Work), orNone(strings.Join(names, ", ")))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func newLower(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "lower FILE",
		Short: "Print the lowered statechart and DAGs as canonical JSON",
		Long: "lower prints {\"ok\": <lowered>} as RFC 8785 canonical JSON, byte for byte what the\n" +
			"reference library's lowerWorkflow gives, or {\"error\": {code, path, message}} and exits 1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(s, args[0])
			if err != nil {
				return err
			}
			doc, err := value.Decode(data, value.Limits{})
			var l *workflow.Lowered
			if err == nil {
				l, err = workflow.Lower(doc)
			} else {
				err = fault.Wrap(fault.JF0021, "workflow must be JSON", "", err)
			}
			if err != nil {
				var path any
				if p, ok := fault.PathOf(err); ok {
					path = p
				}
				fmt.Fprintln(s.out, value.MustCanonical(map[string]any{"error": map[string]any{
					"code": string(fault.CodeOf(err)), "path": path, "message": err.Error(),
				}}))
				return exitError{1}
			}
			fmt.Fprintln(s.out, value.MustCanonical(map[string]any{"ok": l.Value()}))
			return nil
		},
	}
}

func newSimulate(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "simulate SCENARIO",
		Short: "Run a workflow offline against mocked tasks",
		Long: "simulate runs a scenario {document, runId?, input?, tasks, calls} offline and prints one\n" +
			"canonical JSON line: {\"calls\": [...]} or {\"compileError\": {...}}. Each call resumes\n" +
			"from the snapshot of the last successful one. See conformance/README.md for the format.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(s, args[0])
			if err != nil {
				return err
			}
			line, err := sim.RunJSON(data)
			if err != nil {
				return err
			}
			fmt.Fprintln(s.out, line)
			return nil
		},
	}
}
