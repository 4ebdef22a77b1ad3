package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// startControls are start's idempotency, singleton and debounce flags.
type startControls struct {
	idempotency, singletonKey, singleton, debounceKey string
	debounce                                          time.Duration
}

func (c *startControls) flags(f *pflag.FlagSet) {
	f.StringVar(&c.idempotency, "idempotency-key", "", "a start with this `KEY` seen in the last 24 h starts nothing; start prints the run the key started")
	f.StringVar(&c.singletonKey, "singleton-key", "", "at most one active (not settled) run per `KEY`")
	f.StringVar(&c.singleton, "singleton", "", "with --singleton-key: refuse (default) or queue a start while another run of the key is active")
	f.StringVar(&c.debounceKey, "debounce-key", "", "with --debounce: a later start with this `KEY` within the delay replaces this one")
	f.DurationVar(&c.debounce, "debounce", 0, "with --debounce-key: hold the start this long (at most 24h); only the last start of a burst runs")
}

// options checks the flags, naming the one at fault, and returns the
// client options they ask for.
func (c *startControls) options() ([]client.StartOption, error) {
	var opts []client.StartOption
	if c.idempotency != "" {
		opts = append(opts, client.WithIdempotencyKey(c.idempotency))
	}
	switch {
	case c.singletonKey != "":
		switch c.singleton {
		case "", wire.SingletonRefuse, wire.SingletonQueue:
		default:
			return nil, fmt.Errorf("--singleton %q: give %s or %s", c.singleton, wire.SingletonRefuse, wire.SingletonQueue)
		}
		opts = append(opts, client.WithSingleton(c.singletonKey, c.singleton))
	case c.singleton != "":
		return nil, errors.New("--singleton says what to do while a run of the singleton key is active: give --singleton-key KEY too")
	}
	switch {
	case c.debounceKey != "" && c.debounce <= 0:
		return nil, errors.New("--debounce-key needs --debounce D, the delay (such as 5s)")
	case c.debounceKey == "" && c.debounce != 0:
		return nil, errors.New("--debounce needs --debounce-key KEY, which starts replace each other")
	case c.debounce > wire.MaxDebounce:
		return nil, fmt.Errorf("--debounce %s is longer than %s", c.debounce, wire.MaxDebounce)
	case c.debounceKey != "":
		opts = append(opts, client.WithDebounce(c.debounceKey, c.debounce))
	}
	// Checked here as the dispatchers will, so the flag is named.
	var probe wire.Start
	for _, o := range opts {
		o(&probe)
	}
	if err := probe.CheckControls(); err != nil {
		return nil, fmt.Errorf("start controls: %w", err)
	}
	return opts, nil
}

// startControlled publishes a start with controls, waits (up to
// --timeout) for the dispatchers' decision and says it: the run it
// prints is the one that answers the start (for a duplicate, the run the
// idempotency key started first). With wait it follows that run.
func startControlled(ctx context.Context, s streams, conn *connConfig, name, id string, input json.RawMessage, ev *startEvent, wait bool, opts []client.StartOption) error {
	f, stop, err := dialDeployed(ctx, s, conn, name)
	if err != nil {
		return err
	}
	defer stop()
	before, err := f.Client.DecisionMark(ctx, id)
	if err != nil {
		return err
	}
	if err := publishStart(ctx, f, name, id, input, ev, opts...); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	out, err := f.Client.AwaitStart(dctx, id, before)
	cancel()
	switch {
	case errors.Is(err, client.ErrStartRefused):
		fmt.Fprintf(s.err, "start of run %s refused: %v\n", id, err)
		return exitError{exitFailed}
	case errors.Is(err, client.ErrUndecided):
		fmt.Fprintln(s.out, id)
		fmt.Fprintf(s.err, "run %s: the start is published but no dispatcher decided on it within --timeout %s; `jetflow status %s` shows what it becomes\n", id, conn.Timeout, id)
		return nil
	case err != nil:
		return err
	}
	fmt.Fprintln(s.out, out.Run)
	if d := out.Decision; d != nil {
		fmt.Fprintln(s.err, describeDecision(id, *d))
		if d.Outcome == wire.StartOutcomeReplaced {
			return nil
		}
	}
	if !wait {
		return nil
	}
	w, err := f.Client.Watch(ctx, out.Run)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	return follow(ctx, s, f, out.Run, w)
}

// describeDecision says what became of run id's start.
func describeDecision(id string, d wire.StartDecision) string {
	switch d.Outcome {
	case wire.StartOutcomeDuplicate:
		return fmt.Sprintf("idempotency key %q started run %s before: run %s was not started", d.Key, d.Run, id)
	case wire.StartOutcomeRefused:
		return fmt.Sprintf("run %s was not started: run %s holds singleton key %q and has not settled", id, d.Run, d.Key)
	case wire.StartOutcomeQueued:
		return fmt.Sprintf("run %s is queued behind run %s, which holds singleton key %q: it starts once that run settles", id, d.Run, d.Key)
	case wire.StartOutcomeDebounced:
		return fmt.Sprintf("run %s is held by debounce key %q until %s: a start with the key before then replaces it", id, d.Key, time.UnixMilli(int64(d.Due)).UTC().Format(time.RFC3339Nano))
	case wire.StartOutcomeReplaced:
		return fmt.Sprintf("run %s will not start: run %s's start with debounce key %q replaced it", id, d.Run, d.Key)
	}
	return fmt.Sprintf("run %s: start %s (key %q, run %s)", id, d.Outcome, d.Key, d.Run)
}

// printDecision is status for a run id without a record whose start the
// dispatchers decided on: the decision (--json: {run, start: decision}),
// exit 1 unless the start is still held to start later.
func printDecision(s streams, id string, d wire.StartDecision, asJSON bool) error {
	if asJSON {
		if err := json.NewEncoder(s.out).Encode(struct {
			Run   string             `json:"run"`
			Start wire.StartDecision `json:"start"`
		}{id, d}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(s.out, describeDecision(id, d))
	}
	if d.Outcome == wire.StartOutcomeQueued || d.Outcome == wire.StartOutcomeDebounced {
		return nil
	}
	return exitError{exitFailed}
}
