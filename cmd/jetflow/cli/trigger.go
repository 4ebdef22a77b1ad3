package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/trigger"
)

// startTriggers runs the subject triggers deployed with the workflows
// (deploy --triggers) beside the dispatcher of serve and dispatcher. A
// dispatcher whose NATS user may not read or create the trigger bucket
// runs without triggers, and says so: triggers are optional, dispatching
// is not.
func startTriggers(ctx context.Context, f *fleet.Fleet, log *slog.Logger) (*trigger.Runner, error) {
	r := trigger.NewRunner(trigger.Config{JS: f.JS, Names: f.Names, Client: f.Client, Logger: log})
	if err := r.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("triggers: %w", err)
		}
		log.Warn("triggers off: this dispatcher cannot follow the trigger bucket", slog.String("bucket", f.Names.TriggerBucket()), slog.Any("error", err))
	}
	return r, nil
}

// webhookSecret reads a webhook trigger's secret from the variable its
// trigger file names.
func webhookSecret(variable string) string { return os.Getenv(variable) }
