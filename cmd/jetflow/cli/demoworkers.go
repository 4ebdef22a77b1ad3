package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetflow/jetflow/worker"
)

// demoWorkersConfig is what demo workers reads besides the connection.
type demoWorkersConfig struct {
	Drain time.Duration `env:"JETFLOW_DRAIN_TIMEOUT" flag:"drain-timeout"`
}

func newDemoWorkers(s streams) *cobra.Command {
	var conn connConfig
	var c demoWorkersConfig
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "Serve the five tasks of examples/order.json with the demo's Go workers",
		Long: "workers serves check-stock@1, quote-price@1, score-fraud@1, ship@1 and notify@1 from their\n" +
			"durable consumers on the deployment it connects to (`jetflow serve`'s embedded server by\n" +
			"default), with the demo's catalogue: KB-42 (29.99 EUR, 12 in stock), MUG-7 (9.50, 1),\n" +
			"MON-27 (189.00, 4), LAMP-3 (39.90, 6); DISC-9 is unknown to the warehouse, customer\n" +
			"mallory fails the fraud check, the first attempt of every ship fails and is retried, and\n" +
			"a parcel to customer zoe is refused for good on its first attempt (a redrive ships it).\n" +
			"The consumers are created by deploying the workflow; until then it waits for them.\n" +
			"It runs until interrupted; Ctrl-C lets running handlers finish.",
		Example: "  jetflow deploy order examples/order.json && jetflow demo workers",
		Args:    namedArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags(), &c); err != nil {
				return err
			}
			if c.Drain <= 0 {
				return fmt.Errorf("--drain-timeout (JETFLOW_DRAIN_TIMEOUT) must be positive, got %s", c.Drain)
			}
			return demoWorkers(cmd.Context(), s, &conn, c.Drain)
		},
	}
	addConnFlags(cmd, &conn)
	cmd.Flags().DurationVar(&c.Drain, "drain-timeout", 30*time.Second, "how long Ctrl-C waits for running handlers (env JETFLOW_DRAIN_TIMEOUT)")
	return cmd
}

func demoWorkers(ctx context.Context, s streams, conn *connConfig, drain time.Duration) error {
	log := slog.New(slog.NewTextHandler(s.err, nil))
	f, stop, err := dialFleet(ctx, s, conn)
	if err != nil {
		return err
	}
	defer stop()
	tp, stopTracing, err := startTracing(ctx, "jetflow-demo-workers", log)
	if err != nil {
		return err
	}
	defer stopTracing(context.WithoutCancel(ctx))
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, Logger: log, TracerProvider: tp})
	if err != nil {
		return err
	}
	if err := registerDemoTasks(w); err != nil {
		return err
	}
	// Start's context would stop the worker hard when cancelled; the
	// signal drains instead.
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	var names []string
	for _, t := range demoTasks {
		names = append(names, t.name+"@1")
	}
	log.Info("serving the demo's tasks", "tasks", strings.Join(names, ","), "prefix", f.Names.Prefix())
	<-ctx.Done() // main's signal handler: the first Ctrl-C drains
	stopCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
