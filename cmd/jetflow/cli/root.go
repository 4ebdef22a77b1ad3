// Package cli holds the jetflow command's verbs, one file each, listed in
// root.go; what they share is in shared.go. Commands write to injected
// streams so that tests run them as a user would and read what they print.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// exitError carries a command's exit status without printing anything
// more: the command has already said what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// streams are the standard streams a command reads and writes.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs the jetflow command line and returns its exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(streams{in: stdin, out: stdout, err: stderr})
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	}
	fmt.Fprintf(stderr, "jetflow: %v\n", err)
	return 2
}

func newRoot(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "jetflow",
		Short:         "A durable workflow engine for NATS JetStream",
		Long:          "jetflow runs jaren-workflow 0.2 documents across dispatchers and workers on NATS JetStream.\nWith no NATS URL it starts an embedded nats-server; with one it joins an existing cluster.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	for _, add := range commands {
		root.AddCommand(add(s))
	}
	return root
}

// commands are the verbs, each built by the function in its file.
var commands = []func(streams) *cobra.Command{
	newValidate, newLower, newSimulate, // author.go
	newAudit,
	newBench, newBenchAgent,
	newCancel,
	newCheckRevision,
	newConsole,
	newDemo,
	newDeploy,
	newDispatcher,
	newEvent,
	newGraph,
	newHistory,
	newList,
	newMigrate,
	newRedrive,
	newReplay,
	newReset,
	newRetention,
	newServe,
	newStart,
	newStatus,
	newVersion,
	newWorker,
	newWorkflows,
	newPause, newResume, newTerminate, // pause.go
	newTask,
	newJobs,
	newIndex,
	newSchedule,
}
