package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/token"
)

// embedConfig configures the embedded nats-server of serve.
type embedConfig struct {
	Listen    string `env:"JETFLOW_LISTEN" flag:"listen"`
	Data      string `env:"JETFLOW_DATA" flag:"data"`
	Ephemeral bool   `env:"JETFLOW_EPHEMERAL" flag:"ephemeral"`
	Fsync     bool   `env:"JETFLOW_FSYNC" flag:"fsync"`
	// SyncInterval bounds what a power loss can take: the store fsyncs
	// this often (0: the server's two minutes).
	SyncInterval time.Duration `env:"JETFLOW_SYNC_INTERVAL" flag:"sync-interval"`
}

// defaultDataDir is where serve keeps JetStream's store:
// $XDG_DATA_HOME/jetflow, else ~/.local/share/jetflow, else ./jetflow-data.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "jetflow")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "share", "jetflow")
	}
	return "jetflow-data"
}

func newServe(s streams) *cobra.Command {
	var (
		conn connConfig
		svc  serviceConfig
		emb  embedConfig
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run NATS with JetStream, a dispatcher and the health and metrics endpoint",
		Long: "serve is a complete jetflow deployment in one process: an embedded nats-server with\n" +
			"JetStream (its store in --data), the streams and buckets, a dispatcher, and an HTTP\n" +
			"endpoint with /healthz, /readyz and /metrics. It prints the NATS URL workers and the\n" +
			"other verbs connect to (nats: URL) and the HTTP address (http: URL).\n\n" +
			"With --nats it joins an existing NATS deployment instead of embedding one, and\n" +
			"provisions the streams and buckets there (use --replicas 3 on a cluster).\n\n" +
			"Ctrl-C (or SIGTERM) stops taking new work, finishes the steps in flight (bounded by\n" +
			"--drain-timeout) and exits 0.\n\n" +
			"Every flag has an environment variable (named in its help); a flag given wins.\n\n" +
			"Tracing (off by default): OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER=otlp\n" +
			"exports one OpenTelemetry trace per run over OTLP/HTTP (docs/OBSERVABILITY.md).\n\n" +
			gcHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := svc.resolve(); err != nil {
				return err
			}
			if err := emb.resolve(cmd.Flags(), &conn); err != nil {
				return err
			}
			svc.Provision = true // serve always provisions; the flag is the dispatcher's
			e := &embedded.Config{Listen: emb.Listen, DataDir: emb.Data, SyncAlways: emb.Fsync, SyncInterval: emb.SyncInterval}
			if emb.Ephemeral {
				e.DataDir = ""
			}
			return runService(cmd.Context(), s, "serve", &conn, &svc, e)
		},
	}
	addConnFlags(cmd, &conn)
	svc.addFlags(cmd)
	addConsoleFlags(cmd) // the console mounted on the HTTP endpoint (console.go)
	addGatewayFlags(cmd) // the HTTP/JSON gateway mounted there too (gateway.go)
	fs := cmd.Flags()
	fs.Lookup("nats").Usage = "join this NATS deployment, URL(s) comma-separated, instead of embedding a server (env JETFLOW_NATS_URL)"
	fs.StringVar(&emb.Listen, "listen", embedded.DefaultListen, "client address of the embedded nats-server; port -1 picks a free one (env JETFLOW_LISTEN)")
	fs.StringVar(&emb.Data, "data", defaultDataDir(), "JetStream store directory of the embedded server, locked by one serve at a time: $XDG_DATA_HOME/jetflow, else ~/.local/share/jetflow (env JETFLOW_DATA)")
	fs.BoolVar(&emb.Ephemeral, "ephemeral", false, "keep the embedded server's store in a temporary directory removed at exit (env JETFLOW_EPHEMERAL)")
	fs.BoolVar(&emb.Fsync, "fsync", false, "fsync every write of the embedded store: no acknowledged write lost on power loss, slower (env JETFLOW_FSYNC)")
	fs.DurationVar(&emb.SyncInterval, "sync-interval", 0, "fsync the embedded store this often: a power loss loses at most this much acknowledged work; 0 is the server's 2m; docs/PERFORMANCE.md#durability-modes (env JETFLOW_SYNC_INTERVAL)")
	return cmd
}

// resolve applies the environment and refuses embedded-server settings
// given together with --nats.
func (e *embedConfig) resolve(fs *pflag.FlagSet, conn *connConfig) error {
	if err := applyEnv(fs, e); err != nil {
		return err
	}
	if err := conn.resolve(); err != nil {
		return err
	}
	if conn.URL != "" {
		for _, name := range []string{"listen", "data", "ephemeral", "fsync", "sync-interval"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s configures the embedded nats-server, which --nats (JETFLOW_NATS_URL) replaces: give one or the other", name)
			}
		}
		return nil
	}
	if e.SyncInterval < 0 {
		return fmt.Errorf("--sync-interval (JETFLOW_SYNC_INTERVAL) is %s: give a positive duration such as 1s, or 0 for the server's 2m", e.SyncInterval)
	}
	if e.Fsync && e.SyncInterval > 0 {
		return errors.New("--fsync and --sync-interval (JETFLOW_FSYNC, JETFLOW_SYNC_INTERVAL) are alternatives: --fsync syncs every write, --sync-interval every interval; give one")
	}
	if e.Ephemeral && fs.Changed("data") {
		return errors.New("--ephemeral and --data are alternatives: give one")
	}
	if e.Data == "" && !e.Ephemeral {
		return errors.New("--data (JETFLOW_DATA) is empty: name a directory, or give --ephemeral")
	}
	if !e.Ephemeral {
		if err := os.MkdirAll(e.Data, 0o700); err != nil {
			return fmt.Errorf("--data (JETFLOW_DATA): %w", err)
		}
	}
	return nil
}

// serviceConfig is what serve and dispatcher share: the dispatcher, the
// provisioning of streams and buckets, the HTTP endpoint and the log.
type serviceConfig struct {
	HTTP          string        `env:"JETFLOW_HTTP" flag:"http"`
	Concurrency   int           `env:"JETFLOW_CONCURRENCY" flag:"concurrency"`
	Provision     bool          `env:"JETFLOW_PROVISION" flag:"provision"`
	Replicas      int           `env:"JETFLOW_REPLICAS" flag:"replicas"`
	HistoryMaxAge time.Duration `env:"JETFLOW_HISTORY_MAX_AGE" flag:"history-max-age"`
	DrainTimeout  time.Duration `env:"JETFLOW_DRAIN_TIMEOUT" flag:"drain-timeout"`
	AckWait       time.Duration `env:"JETFLOW_ACK_WAIT" flag:"ack-wait"`
	MigrateInputs bool          `env:"JETFLOW_MIGRATE_INPUTS" flag:"migrate-inputs"`
	Partitions    int           `env:"JETFLOW_PARTITIONS" flag:"partitions"`
	MigrateParts  bool          `env:"JETFLOW_MIGRATE_PARTITIONS" flag:"migrate-partitions"`
	Retention     string        `env:"JETFLOW_RETENTION" flag:"retention"`
	Archive       bool          `env:"JETFLOW_ARCHIVE" flag:"archive"`
	ArchiveMaxAge time.Duration `env:"JETFLOW_ARCHIVE_MAX_AGE" flag:"archive-max-age"`
	JobRetention  string        `env:"JETFLOW_JOB_RETENTION" flag:"job-retention"`
	Index         bool          `env:"JETFLOW_INDEX" flag:"index"`
	AuditMaxAge   time.Duration `env:"JETFLOW_AUDIT_MAX_AGE" flag:"audit-max-age"`
	LogLevel      string        `env:"JETFLOW_LOG_LEVEL" flag:"log-level"`
	LogFormat     string        `env:"JETFLOW_LOG_FORMAT" flag:"log-format"`

	tokens    secretConfig
	signer    *token.Signer // from tokens, set by resolve
	retention time.Duration // from Retention, set by resolve: negative keeps runs for ever
	jobKeep   time.Duration // from JobRetention, set by resolve: negative keeps jobs for ever
	flags     *pflag.FlagSet
	resolved  bool
	err       error
}

// parseRetention reads --retention: "off", or a duration of at least a
// second; off is a negative dispatcher.Config.Retention.
func parseRetention(s string) (time.Duration, error) {
	return parseKeep(s, "--retention (JETFLOW_RETENTION)")
}

// parseKeep reads a retention flag: "off" (negative), or a duration of at
// least a second.
func parseKeep(s, flag string) (time.Duration, error) {
	if s == "off" {
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("%s must be off or a duration of at least 1s (\"72h\"), got %q", flag, s)
	}
	return d, nil
}

// minAckWait is the shortest --ack-wait accepted: shorter, a dispatcher
// that merely waits for NATS would see its inputs redelivered.
const minAckWait = time.Second

func (c *serviceConfig) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	c.flags = fs
	fs.StringVar(&c.HTTP, "http", defaultHTTP, "address of /healthz, /readyz and /metrics; port -1 picks a free one, off turns it off (env JETFLOW_HTTP)")
	fs.IntVar(&c.Concurrency, "concurrency", dispatcher.DefaultConcurrency, "most run inputs this dispatcher handles at once, fewer while round trips to NATS time out (env JETFLOW_CONCURRENCY)")
	fs.IntVar(&c.Replicas, "replicas", 1, "replicas of every stream and bucket provisioned: 1 on one server, 3 on a cluster (env JETFLOW_REPLICAS)")
	fs.DurationVar(&c.HistoryMaxAge, "history-max-age", 0, "how long the input stream keeps run history; 0 keeps it forever; pending timers do not depend on it (env JETFLOW_HISTORY_MAX_AGE)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 30*time.Second, "on Ctrl-C, how long steps in flight may take to finish before they are handed back for redelivery (env JETFLOW_DRAIN_TIMEOUT)")
	fs.DurationVar(&c.AckWait, "ack-wait", dispatcher.DefaultAckWait, "how long an input a dispatcher took waits for its acknowledgement before another dispatcher gets it: the recovery time after a dispatcher is killed; at least 1s; shared by all dispatchers, the last started sets it (env JETFLOW_ACK_WAIT)")
	fs.BoolVar(&c.MigrateInputs, "migrate-inputs", false, "with provisioning: move an input stream made by an older jetflow, which allows schedules and roll-ups, to the safe layout (pending timers and unconsumed inputs move, consumed history is dropped); stop every other dispatcher first (env JETFLOW_MIGRATE_INPUTS)")
	fs.IntVar(&c.Partitions, "partitions", 0, "with provisioning: how many partitions a new input stream routes run inputs to by run id, each consumed by one dispatcher at a time; 0 means 16, -1 none; fixed once the stream exists (env JETFLOW_PARTITIONS)")
	fs.BoolVar(&c.MigrateParts, "migrate-partitions", false, "with provisioning: partition an unpartitioned input stream in place (--partitions of them, 16 if 0); history stays, inputs stored before are finished by the shared consumer; stop every other dispatcher first and restart them after (env JETFLOW_MIGRATE_PARTITIONS)")
	fs.StringVar(&c.Retention, "retention", dispatcher.DefaultRetention.String(), "how long a settled run (done, failed, cancelled) is kept before its record, history and schedules are removed; off keeps settled runs for ever; a deployment's policy may set its own (env JETFLOW_RETENTION)")
	fs.BoolVar(&c.Archive, "archive", false, "write a settled run's record and history to the archive (Object Store bucket <prefix>_archive) before retention removes it; status, history and replay read it there; a deployment's policy may say otherwise (env JETFLOW_ARCHIVE)")
	fs.DurationVar(&c.ArchiveMaxAge, "archive-max-age", provision.DefaultArchiveMaxAge, "with provisioning: how long the archive keeps an archived run (env JETFLOW_ARCHIVE_MAX_AGE)")
	fs.StringVar(&c.JobRetention, "job-retention", bulk.DefaultJobRetention.String(), "how long a finished or cancelled bulk job's record is kept (jetflow jobs lists it) before a dispatcher removes it; off keeps job records for ever (env JETFLOW_JOB_RETENTION)")
	fs.BoolVar(&c.Index, "index", true, "keep the run index list reads; --index=false keeps none, and list then reads every run record (give every dispatcher the same) (env JETFLOW_INDEX)")
	fs.DurationVar(&c.AuditMaxAge, "audit-max-age", provision.DefaultAuditMaxAge, "with provisioning: how long the audit log (stream <prefix>_audit) keeps an entry (env JETFLOW_AUDIT_MAX_AGE)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error (env JETFLOW_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text or json, on standard error (env JETFLOW_LOG_FORMAT)")
	addSecretFlags(cmd, &c.tokens)
}

// resolve applies the environment and checks the result, once.
func (c *serviceConfig) resolve() error {
	if !c.resolved {
		c.resolved = true
		c.err = c.check()
	}
	return c.err
}

func (c *serviceConfig) check() error {
	if err := applyEnv(c.flags, c); err != nil {
		return err
	}
	var errs []error
	var err error
	if c.Concurrency <= 0 {
		errs = append(errs, fmt.Errorf("--concurrency (JETFLOW_CONCURRENCY) must be positive, got %d", c.Concurrency))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("--replicas (JETFLOW_REPLICAS) must be 1 to 5, got %d", c.Replicas))
	}
	if c.HistoryMaxAge < 0 {
		errs = append(errs, fmt.Errorf("--history-max-age (JETFLOW_HISTORY_MAX_AGE) must not be negative, got %s", c.HistoryMaxAge))
	}
	if c.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout (JETFLOW_DRAIN_TIMEOUT) must be positive, got %s", c.DrainTimeout))
	}
	if c.ArchiveMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("--archive-max-age (JETFLOW_ARCHIVE_MAX_AGE) must be at least 1h, got %s", c.ArchiveMaxAge))
	}
	if c.AuditMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("--audit-max-age (JETFLOW_AUDIT_MAX_AGE) must be at least 1h, got %s", c.AuditMaxAge))
	}
	if c.AckWait < minAckWait {
		errs = append(errs, fmt.Errorf("--ack-wait (JETFLOW_ACK_WAIT) must be at least %s, got %s", minAckWait, c.AckWait))
	}
	if c.retention, err = parseRetention(c.Retention); err != nil {
		errs = append(errs, err)
	}
	if c.jobKeep, err = parseKeep(c.JobRetention, "--job-retention (JETFLOW_JOB_RETENTION)"); err != nil {
		errs = append(errs, err)
	}
	if c.signer, err = c.tokens.signer(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format (JETFLOW_LOG_FORMAT) must be text or json, got %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level (JETFLOW_LOG_LEVEL) must be debug, info, warn or error, got %q", s)
	}
	return l, nil
}

func (c *serviceConfig) logger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// runService runs a dispatcher (and, for serve, the embedded server when
// emb is set and no URL is configured) with the HTTP endpoint, until ctx
// ends; then it drains and returns nil.
func runService(ctx context.Context, s streams, verb string, conn *connConfig, svc *serviceConfig, emb *embedded.Config) error {
	if err := conn.resolve(); err != nil {
		return err
	}
	if err := svc.resolve(); err != nil {
		return err
	}
	embedding := conn.URL == "" && emb != nil
	if embedding && svc.Replicas > 1 {
		return fmt.Errorf("--replicas (JETFLOW_REPLICAS) %d needs a cluster; the embedded nats-server is a single node (join a cluster with --nats)", svc.Replicas)
	}
	log := svc.logger(s.err)
	dispatcher.TuneGC(gogcSet()) // a dispatcher's GOGC unless the environment sets one
	if conflicts := (dispatcher.Config{}).WithDefaults().ConflictTimeout; svc.AckWait < conflicts {
		log.Warn("--ack-wait is shorter than a step slowed by conflicts or NATS may take: such inputs are redelivered to another dispatcher while still in hand (safe: applied once, but duplicate work)",
			slog.Duration("ack_wait", svc.AckWait), slog.Duration("conflict_timeout", conflicts))
	}
	if embedding && emb.DataDir != "" {
		// Before the HTTP port: a second serve on the same --data, with
		// the default ports, is told about the directory, not a port.
		if err := embedded.CheckDataDir(ctx, emb.DataDir); err != nil {
			return hintDataDir(err)
		}
	}
	// The gateway it mounts: refused before anything starts.
	if _, err := gatewayGrants(svc.HTTP); err != nil {
		return err
	}
	var ep *httpEndpoint
	if svc.HTTP != "" && svc.HTTP != "off" {
		// The console it mounts: refused before anything starts.
		if _, _, err := mountedSettings(svc.HTTP); err != nil {
			return err
		}
		mounted.addr = svc.HTTP
		var err error
		if ep, err = listenHTTP(svc.HTTP); err != nil {
			return err
		}
		if embedding {
			emb.LockNote = "http " + ep.ln.Addr().String()
		}
	}
	tp, stopTracing, err := startTracing(ctx, "jetflow-"+verb, log)
	if err != nil {
		if ep != nil {
			_ = ep.shutdown(context.Background())
		}
		return err
	}
	// Deferred first, so it runs last: after the dispatcher drained.
	defer stopTracing(context.WithoutCancel(ctx))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f, err := conn.open(ctx, openOptions{
		Embedded:         emb,
		Provision:        svc.Provision,
		ProvisionOptions: provision.ProvisionOptions{Replicas: svc.Replicas, MaxAge: svc.HistoryMaxAge, ArchiveMaxAge: svc.ArchiveMaxAge, AuditMaxAge: svc.AuditMaxAge, Partitions: svc.Partitions},
		MigrateInputs:    svc.MigrateInputs,
		MigrateParts:     svc.MigrateParts,
		Dispatcher: &dispatcher.Config{
			Concurrency: svc.Concurrency, AckWait: svc.AckWait, Tokens: svc.signer, Retention: svc.retention, Archive: svc.Archive,
			Index: runindex.Config{Off: !svc.Index}, TracerProvider: tp,
			Jobs: bulk.Config{JobRetention: svc.jobKeep},
		},
		Registerer: reg,
		Logger:     log,
	})
	if err != nil {
		if ep != nil {
			_ = ep.shutdown(context.Background())
		}
		return hintStart(hintDataDir(err))
	}
	if f.Conn.ConnectedClusterName() != "" && svc.Replicas == 1 && svc.Provision {
		log.Warn("joined a NATS cluster with --replicas 1: one node's loss loses runs; use --replicas 3",
			slog.String("cluster", f.Conn.ConnectedClusterName()))
	}
	// Subject triggers (trigger.go): every dispatcher shares their consumers.
	triggers, err := startTriggers(ctx, f, log)
	if err != nil {
		_ = stopBounded(ctx, f)
		if ep != nil {
			_ = ep.shutdown(context.Background())
		}
		return err
	}
	h := &health{f: f}
	h.phase.Store(phaseRunning)
	// The URLs come last: a script may stop reading at the one it needs.
	if embedding && emb.DataDir != "" {
		fmt.Fprintf(s.out, "data: %s\n", emb.DataDir)
	}
	fmt.Fprintf(s.out, "nats: %s\n", redactURLs(f.URL()))
	attrs := []any{
		slog.String("nats", redactURLs(f.URL())), slog.String("prefix", f.Names.Prefix()),
		slog.Duration("ack_wait", svc.AckWait), slog.String("retention", svc.Retention), slog.Bool("archive", svc.Archive), slog.Bool("index", svc.Index), secretAttrs(svc.signer),
	}
	if ep != nil {
		ep.serve(f, reg, h, log)
		fmt.Fprintf(s.out, "http: %s\n", ep.URL())
		attrs = append(attrs, slog.String("http", ep.URL()))
	}
	log.Info("jetflow "+verb+" running", attrs...)

	<-ctx.Done()
	log.Info("draining", slog.Duration("drain_timeout", svc.DrainTimeout))
	h.phase.Store(phaseDraining)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), svc.DrainTimeout)
	defer cancel()
	err = errors.Join(triggers.Stop(stopCtx), stopBounded(stopCtx, f))
	if ep != nil {
		err = errors.Join(err, ep.shutdown(stopCtx))
	}
	if err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	log.Info("stopped")
	return nil
}

// hintDataDir words a data directory held by another process for the
// command line (the embedded package's hint knows no flags).
func hintDataDir(err error) error {
	var inUse *embedded.DataDirInUseError
	if !errors.As(err, &inUse) {
		return err
	}
	e := *inUse
	e.Hint = "stop it or pass another --data (JETFLOW_DATA)"
	return &e
}

// redactURLs hides passwords in a comma-separated list of URLs.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// stopGrace is how long past the drain timeout a stop may still take.
const stopGrace = 5 * time.Second

// stopBounded stops the fleet, giving up stopGrace after ctx ends: with
// NATS unreachable a consumer's drain can wait for a reconnect that never
// comes, and the process must still exit (whatever was in flight is
// redelivered to another dispatcher).
// hintUnreachable explains a drain that ran out of time while NATS was
// away: nothing could be acknowledged, so the inputs will be redelivered.
func hintUnreachable(f *fleet.Fleet, err error) error {
	if err == nil || f.Conn == nil || f.Conn.IsConnected() {
		return err
	}
	return fmt.Errorf("drain did not finish (is NATS reachable?); unacknowledged inputs will be redelivered: %w", err)
}

func stopBounded(ctx context.Context, f *fleet.Fleet) error {
	done := make(chan error, 1)
	go func() { done <- f.Stop(ctx) }()
	select {
	case err := <-done:
		return hintUnreachable(f, err)
	case <-ctx.Done():
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return hintUnreachable(f, err)
	case <-grace.C:
		return fmt.Errorf("gave up %s after the drain timeout (is NATS reachable?); unacknowledged inputs will be redelivered: %w", stopGrace, context.Cause(ctx))
	}
}
