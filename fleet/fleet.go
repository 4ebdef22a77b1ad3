// Package fleet assembles a jetflow deployment from its parts: a NATS
// connection (to an embedded server it starts, or to an existing cluster),
// the provisioned streams and buckets, the workflow registry wired to the
// engine's validation, and optionally a dispatcher. The command, the demo,
// the benchmarks and the integration tests all start jetflow through it.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
)

// Config says how to reach NATS and what to run.
type Config struct {
	// URL joins an existing NATS deployment; empty starts an embedded
	// server configured by Embedded.
	URL string
	// NATSOptions are extra client options (credentials, nkeys, TLS).
	NATSOptions []nats.Option
	// Embedded configures the embedded server when URL is empty.
	Embedded embedded.Config
	// Prefix names the deployment's subjects, streams and buckets.
	// Default subjects.DefaultPrefix.
	Prefix string
	// Provision creates or updates streams and buckets at start. Default
	// options: one replica, file storage.
	Provision provision.ProvisionOptions
	// MigrateInputs moves an input stream made by an older jetflow
	// (provision.ErrUnsafeInputStream) to the safe layout before
	// provisioning, with provision.MigrateInputStream: pending timers and
	// unconsumed inputs move, the consumed history is dropped. Only when
	// no dispatcher runs.
	MigrateInputs bool
	// MigrateParts partitions an unpartitioned input stream in place
	// before provisioning, with provision.MigratePartitions
	// (Provision.Partitions of them, provision.DefaultPartitions if 0).
	// Only when no dispatcher runs; dispatchers started before must be
	// started again.
	MigrateParts bool
	// SkipProvision leaves streams and buckets as they are (a process
	// without the rights to create them).
	SkipProvision bool
	// Dispatcher starts a dispatcher when set. With Tokens set (a
	// configured secret) Start first records the secret's fingerprint in
	// the workflow bucket, and fails with an error wrapping
	// token.ErrDisagree when the deployment's dispatchers use another
	// (token.Claim); without, the dispatcher loads the bucket's secret.
	Dispatcher *dispatcher.Config
	// PayloadThreshold is the largest body the fleet's client,
	// dispatcher and run store send or store inline; a larger one goes to
	// the payload bucket by reference. Default: the dispatcher's
	// PayloadThreshold, else payload.DefaultThreshold (512 KiB).
	PayloadThreshold int
	// TaskPolicy is applied to every task consumer a deploy creates; a
	// deployment's policy overrides its StartToClose per task version.
	TaskPolicy provision.TaskPolicy
	// Registerer receives the metrics; nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Fleet is a running deployment. Stop it once.
type Fleet struct {
	Names      subjects.Names
	Server     *embedded.Server // nil when joined by URL
	Conn       *nats.Conn
	JS         jetstream.JetStream
	Registry   *registry.Registry
	Runs       *kvstore.RunStore
	Client     *client.Client
	Dispatcher *dispatcher.Dispatcher // nil unless Config.Dispatcher was set

	cfg      Config
	stopOnce sync.Once
	stopErr  error
}

// Start connects (starting the embedded server when no URL is given),
// provisions, opens the registry and run store, and starts a dispatcher
// when asked. On error everything it started is stopped again.
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	names, err := subjects.New(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("prefix: %w", err)
	}
	f := &Fleet{Names: names, cfg: cfg}
	if err := f.start(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f.Stop(stopCtx)
		return nil, err
	}
	return f, nil
}

func (f *Fleet) start(ctx context.Context) error {
	cfg := f.cfg
	opts := append([]nats.Option{nats.Name("jetflow"), nats.MaxReconnects(-1)}, cfg.NATSOptions...)
	if cfg.URL == "" {
		ecfg := cfg.Embedded
		if ecfg.Logger == nil {
			ecfg.Logger = cfg.Logger
		}
		srv, err := embedded.Start(ctx, ecfg)
		if err != nil {
			return fmt.Errorf("starting the embedded nats-server: %w", err)
		}
		f.Server = srv
		if f.Conn, err = srv.Connect(opts...); err != nil {
			return fmt.Errorf("connecting to the embedded nats-server: %w", err)
		}
	} else {
		var err error
		if f.Conn, err = nats.Connect(cfg.URL, opts...); err != nil {
			return fmt.Errorf("connecting to %s: %w", cfg.URL, err)
		}
	}
	js, err := jetstream.New(f.Conn)
	if err != nil {
		return err
	}
	f.JS = js
	if !cfg.SkipProvision {
		p := cfg.Provision
		if f.Server != nil && p.Storage == 0 {
			p.Storage = f.Server.Storage()
		}
		if err := f.provision(ctx, p); err != nil {
			return fmt.Errorf("provisioning streams and buckets: %w", err)
		}
	}
	if f.Registry, err = registry.OpenRegistry(ctx, js, f.Names, registry.RegistryConfig{Validate: Validate}); err != nil {
		return fmt.Errorf("opening the workflow registry: %w", err)
	}
	if f.Runs, err = kvstore.OpenRunStore(ctx, js, f.Names); err != nil {
		return fmt.Errorf("opening the run store: %w", err)
	}
	pc := payload.Config{Names: f.Names, Threshold: cfg.PayloadThreshold}
	if cfg.Dispatcher != nil {
		if cfg.Dispatcher.PayloadThreshold != 0 {
			pc.Threshold = cfg.Dispatcher.PayloadThreshold
		}
		pc.MaxBytes = cfg.Dispatcher.MaxPayloadBytes
	}
	if ps, err := payload.Open(ctx, js, pc); err == nil {
		f.Runs.WithPayloads(ps)
	} else if !errors.Is(err, payload.ErrNoBucket) {
		return fmt.Errorf("opening the payload bucket: %w", err)
	}
	// Search lets a scan (list --scan, a bulk count) answer --where.
	search := runindex.RegistrySearch(f.Registry, 5*time.Second)
	if f.Client, err = client.New(ctx, js, client.Config{Names: f.Names, Store: f.Runs, Search: search, PayloadThreshold: pc.Threshold}); err != nil {
		return err
	}
	if cfg.Dispatcher != nil {
		dc := *cfg.Dispatcher
		dc.Names = f.Names
		if dc.PayloadThreshold == 0 {
			dc.PayloadThreshold = cfg.PayloadThreshold
		}
		if dc.Logger == nil {
			dc.Logger = cfg.Logger
		}
		if dc.Registerer == nil {
			dc.Registerer = cfg.Registerer
		}
		if dc.Tokens != nil {
			// A configured secret: refuse to start rather than refuse the
			// results of dispatchers that hold another.
			if err := token.Claim(ctx, js, f.Names, dc.Tokens); err != nil {
				return fmt.Errorf("starting the dispatcher: %w", err)
			}
		}
		f.warnAckWait(ctx, dc.WithDefaults().AckWait)
		d, err := dispatcher.New(js, f.Runs, f.Registry, dc)
		if err != nil {
			return err
		}
		if err := d.Start(ctx); err != nil {
			return fmt.Errorf("starting the dispatcher: %w", err)
		}
		f.Dispatcher = d
	}
	return nil
}

// warnAckWait logs when this dispatcher is about to change the AckWait of
// the consumer all dispatchers share: the last one started sets it.
func (f *Fleet) warnAckWait(ctx context.Context, want time.Duration) {
	c, err := f.JS.Consumer(ctx, f.Names.InputStream(), f.Names.DispatcherConsumer())
	if err != nil {
		// A partitioned deployment's: each partition's consumer takes
		// the AckWait of the dispatcher that takes the partition.
		c, err = f.JS.Consumer(ctx, f.Names.InputStream(), f.Names.PartitionConsumer(0))
	}
	if err != nil {
		return // none yet, or unreadable: Start says so if it matters
	}
	if had := c.CachedInfo().Config.AckWait; had != want {
		f.cfg.Logger.Warn("fleet: this dispatcher changes the AckWait all dispatchers share; give every dispatcher the same",
			slog.String("consumer", c.CachedInfo().Name), slog.Duration("before", had), slog.Duration("after", want))
	}
}

// Tokens is the configured signer of the dispatcher's result tokens
// (Config.Dispatcher.Tokens), for the parts that check tokens beside it
// (the console's replays); nil when the secret comes from the workflow
// bucket.
func (f *Fleet) Tokens() *token.Signer {
	if f.cfg.Dispatcher == nil {
		return nil
	}
	return f.cfg.Dispatcher.Tokens
}

// URL is the NATS URL workers and other processes connect to.
func (f *Fleet) URL() string {
	if f.Server != nil {
		return f.Server.ClientURL()
	}
	return f.cfg.URL
}

// Stop drains the dispatcher, closes the connection and stops the
// embedded server. It is safe to call more than once.
func (f *Fleet) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		var errs []error
		if f.Dispatcher != nil {
			errs = append(errs, f.Dispatcher.Stop(ctx))
		}
		if f.Conn != nil {
			errs = append(errs, f.Conn.Drain())
		}
		if f.Server != nil {
			errs = append(errs, f.Server.Stop(ctx))
		}
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

// provision creates or updates the streams and buckets, first migrating
// an unsafe input stream when the configuration asks for it.
func (f *Fleet) provision(ctx context.Context, p provision.ProvisionOptions) error {
	if err := f.provisionInputs(ctx, p); err != nil || !f.cfg.MigrateParts {
		return err
	}
	m, err := provision.MigratePartitions(ctx, f.JS, f.Names, p)
	if err != nil {
		return fmt.Errorf("partitioning the input stream: %w", err)
	}
	if m.Migrated {
		f.cfg.Logger.Info("input stream partitioned", slog.String("stream", f.Names.InputStream()),
			slog.Int("partitions", m.Partitions), slog.Uint64("inputs_left_to_the_shared_consumer", m.Unpartitioned))
	}
	return nil
}

// provisionInputs is provision without the partitioning.
func (f *Fleet) provisionInputs(ctx context.Context, p provision.ProvisionOptions) error {
	if f.cfg.MigrateParts {
		// The count asked for is the migration's; provisioning keeps an
		// existing stream's until then. Bounded: a cluster still electing
		// its leader answers no request.
		sctx, cancel := context.WithTimeout(ctx, provision.DefaultAttemptTimeout)
		_, err := f.JS.Stream(sctx, f.Names.InputStream())
		cancel()
		if err == nil {
			p.Partitions = 0
		}
	}
	err := provision.Provision(ctx, f.JS, f.Names, p)
	if !errors.Is(err, provision.ErrUnsafeInputStream) || !f.cfg.MigrateInputs {
		return err
	}
	m, err := provision.MigrateInputStream(ctx, f.JS, f.Names, p)
	if err != nil {
		return fmt.Errorf("migrating the input stream: %w", err)
	}
	f.cfg.Logger.Info("input stream migrated", slog.String("stream", f.Names.InputStream()),
		slog.Int("timers_moved", m.Schedules), slog.Int("inputs_moved", m.Inputs),
		slog.Uint64("history_dropped", m.Dropped), slog.Uint64("first_seq", m.FirstSeq))
	return provision.Provision(ctx, f.JS, f.Names, p)
}
