package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/worker"
	"github.com/jetflow/jetflow/worker/exec"
)

func newWorker(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve tasks",
		Long:  "worker serves tasks from their durable consumers. See docs/WORKERS.md for the protocol.",
		Args:  namedArgs(),
	}
	cmd.AddCommand(newWorkerExec(s))
	return cmd
}

// execConfig is worker exec's own settings; like every flag of the
// services, each has its variable (the flag's name after JETFLOW_, as serve
// and the Node.js worker name the same settings).
type execConfig struct {
	Task        string        `env:"JETFLOW_TASK" flag:"task"`
	Concurrency int           `env:"JETFLOW_CONCURRENCY" flag:"concurrency"`
	Create      bool          `env:"JETFLOW_CREATE_CONSUMER" flag:"create-consumer"`
	Drain       time.Duration `env:"JETFLOW_DRAIN_TIMEOUT" flag:"drain-timeout"`
}

func newWorkerExec(s streams) *cobra.Command {
	var conn connConfig
	var c execConfig
	cmd := &cobra.Command{
		Use:   "exec --task NAME@VERSION -- COMMAND [ARGS...]",
		Short: "Serve a task with any program, run once per invocation",
		Long: "exec serves task NAME@VERSION by running COMMAND once per invocation: the invocation is\n" +
			"one JSON object on its stdin ({run, activation, state, node, task, version, attempt,\n" +
			"delivery, idempotencyKey, input, with}), its stdout must be one JSON value, the output;\n" +
			"a non-zero exit fails the attempt with code EXIT_<status> and the end of its stderr as\n" +
			"the message. The task's consumer is created by deploying a workflow that uses it\n" +
			"(or by --create-consumer). Ctrl-C drains: running programs finish and report; a second\n" +
			"Ctrl-C, or --drain-timeout, kills them and hands their invocations back.\n\n" +
			"With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER=otlp) each attempt is a span\n" +
			"in its run's trace, and COMMAND gets it as TRACEPARENT (docs/OBSERVABILITY.md).",
		Example: "  jetflow worker exec --task notify@1 -- ./notify.sh\n" +
			"  jetflow worker exec --task score-fraud@1 --concurrency 4 -- python3 score.py",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags(), &c); err != nil {
				return err
			}
			name, version, err := parseTaskFlag(c.Task)
			if err != nil {
				return err
			}
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return fmt.Errorf("missing COMMAND after -- (usage: %s)", cmd.UseLine())
			}
			if c.Concurrency < 1 {
				return fmt.Errorf("--concurrency (JETFLOW_CONCURRENCY) must be at least 1, got %d", c.Concurrency)
			}
			if c.Drain <= 0 {
				return fmt.Errorf("--drain-timeout (JETFLOW_DRAIN_TIMEOUT) must be positive, got %s", c.Drain)
			}
			h, err := exec.Handler(args, exec.Options{Stderr: s.err})
			if err != nil {
				return fmt.Errorf("COMMAND: %w", err)
			}
			return serveExec(cmd.Context(), s, &conn, name, version, h, worker.Config{Concurrency: c.Concurrency, CreateConsumers: c.Create}, c.Drain)
		},
	}
	addConnFlags(cmd, &conn)
	f := cmd.Flags()
	f.StringVar(&c.Task, "task", "", "the task version to serve, NAME@VERSION (required; env JETFLOW_TASK)")
	f.IntVar(&c.Concurrency, "concurrency", worker.DefaultConcurrency, "how many invocations run at once in this process (env JETFLOW_CONCURRENCY)")
	f.BoolVar(&c.Create, "create-consumer", false, "create the task's consumer if no deployment has yet, for development (env JETFLOW_CREATE_CONSUMER)")
	f.DurationVar(&c.Drain, "drain-timeout", 30*time.Second, "how long Ctrl-C waits for running programs before killing them (env JETFLOW_DRAIN_TIMEOUT)")
	return cmd
}

// parseTaskFlag splits --task NAME@VERSION and checks both parts.
func parseTaskFlag(v string) (name, version string, err error) {
	if v == "" {
		return "", "", fmt.Errorf("--task NAME@VERSION (JETFLOW_TASK) is required")
	}
	name, version, ok := strings.Cut(v, "@")
	if !ok {
		return "", "", fmt.Errorf("--task %q: want NAME@VERSION, such as notify@1", v)
	}
	if err := subjects.CheckTask(name); err != nil {
		return "", "", fmt.Errorf("--task: %w", err)
	}
	if err := subjects.CheckVersion(version); err != nil {
		return "", "", fmt.Errorf("--task: %w", err)
	}
	return name, version, nil
}

func serveExec(ctx context.Context, s streams, conn *connConfig, task, version string, h worker.Handler, cfg worker.Config, drain time.Duration) error {
	log := slog.New(slog.NewTextHandler(s.err, nil))
	tp, stopTracing, err := startTracing(ctx, "jetflow-worker-exec", log)
	if err != nil {
		return err
	}
	defer stopTracing(context.WithoutCancel(ctx))
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return err
	}
	defer stop()
	cfg.Names, cfg.Logger, cfg.TracerProvider = f.Names, log, tp
	cfg.PayloadThreshold = conn.PayloadThreshold
	w, err := worker.New(f.JS, cfg)
	if err != nil {
		return err
	}
	if err := w.Register(task, version, h); err != nil {
		return err
	}
	// Start's context would stop the worker hard when cancelled; the
	// first signal drains instead.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	log.Info("serving", "task", task, "version", version, "consumer", f.Names.TaskConsumer(task, version), "concurrency", cfg.Concurrency)
	<-ctx.Done()
	log.Info("draining: running programs finish and report (Ctrl-C again to stop now)", "timeout", drain)
	stopCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	stopCtx, unnotify := signal.NotifyContext(stopCtx, os.Interrupt, syscall.SIGTERM)
	defer unnotify()
	if err := w.Stop(stopCtx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
