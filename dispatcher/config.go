package dispatcher

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetflow/jetflow/bulk"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/schedule"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// Config configures a Dispatcher. The zero value is usable once passed
// through WithDefaults (New does that).
type Config struct {
	// Names builds every subject, stream, consumer and bucket name.
	// Default: subjects.Must("") (prefix "jetflow").
	Names subjects.Names
	// Logger receives one line per notable event; run lines carry run_id.
	// Default: slog.Default().
	Logger *slog.Logger
	// Registerer receives the dispatcher's metrics. Dispatchers sharing one
	// Registerer share their collectors. Default: nil (metrics are kept but
	// not registered anywhere).
	Registerer prometheus.Registerer
	// Concurrency is how many messages one process handles at once (never
	// two of the same run). Default: DefaultConcurrency.
	Concurrency int
	// AckWait is how long the server waits for an acknowledgement before
	// redelivering an input to any dispatcher: after a dispatcher is
	// killed, its inputs in hand wait this long. Dispatchers share one
	// consumer, so the last one started sets it for all. Steps send no
	// heartbeat: one that outlasts AckWait (conflicts, a slow NATS) is
	// redelivered while it runs, which is safe but duplicate work.
	// Default: DefaultAckWait.
	AckWait time.Duration
	// MaxAckPending caps unacknowledged inputs across all dispatchers.
	// Dispatchers take inputs in up to it and let those of known runs
	// overtake the rest (lanes.go), so it is also how large a burst of
	// stray inputs can be without delaying anyone. Default: 65536.
	MaxAckPending int
	// MaxQueuedBytes caps the bytes of the inputs one process holds in
	// its queues; an input past it is handed back for a second. Default:
	// 64 MiB.
	MaxQueuedBytes int
	// AppliedHistory is how many recently applied input sequences a run
	// record keeps to recognise redeliveries. Default: 128.
	AppliedHistory int
	// RejectedHistory is how many recent rejections, and how many recent
	// ignored events, a run record keeps. Default: 32.
	RejectedHistory int
	// ConflictTimeout bounds the reload-and-reapply loop after
	// compare-and-swap conflicts before the input is handed back for
	// redelivery. Default: 10s.
	ConflictTimeout time.Duration
	// OpTimeout bounds each NATS round trip (KV read or write, publish).
	// Default: 5s.
	OpTimeout time.Duration
	// RetryDelay is the first redelivery delay after a transient failure;
	// it doubles with each delivery up to MaxRetryDelay. Default: 250ms.
	RetryDelay time.Duration
	// MaxRetryDelay caps RetryDelay. Default: 30s.
	MaxRetryDelay time.Duration
	// UnknownRunWait is how long an input for a run that has no record,
	// but whose start is in the input stream before it, is redelivered
	// (the start is in another dispatcher's hands) before it is
	// terminated, measured from the input's stream time. An input for a
	// run the stream holds no start for is terminated at once. Default:
	// twice AckWait and at least a minute, so that a start held by a
	// killed dispatcher, or by a server outage, is applied first.
	UnknownRunWait time.Duration
	// MaxEarlyInputs caps the inputs one process holds back to wait for
	// their runs' starts, a quarter of them for any one run: each holds a
	// MaxAckPending place meanwhile. One more is terminated with the
	// reason. Default: 128.
	MaxEarlyInputs int
	// Clock tells the time of the dispatcher's own timing decisions and
	// paces its own waits: how long an input waits for its run's start
	// (UnknownRunWait, against the input's stream time), the retries of
	// compare-and-swap conflicts (ConflictTimeout), the throttle of the
	// unknown-run log, the time left to an invocation (its TTL). Stream
	// times, timers and redelivery delays are the server's. Default:
	// clock.Real{}.
	Clock clock.Clock
	// CacheSize is how many run records one process keeps in memory to
	// skip the read before a step (a stale entry only costs a conflict).
	// Default: 4096; negative disables the cache.
	CacheSize int
	// DefinitionCacheSize is how many compiled workflow definitions are
	// kept, keyed by content hash. Default: 256.
	DefinitionCacheSize int

	// RunOptions are the reducer's host settings (task retry policies)
	// for deployments that carry no policy of their own; a deployment's
	// policy (registry.Document.Policy) replaces them for its runs.
	// Default: the zero value (run's default policies).
	RunOptions run.Options

	// Tokens signs the token of every task invocation and checks the
	// token every result echoes; a result whose token does not verify is
	// rejected. All dispatchers of a deployment need the same secret.
	// Default: nil: Start loads the deployment's secret from the workflow
	// bucket (token.Load), creating it on first use.
	Tokens *token.Signer

	// TracerProvider, when set, traces every input the dispatcher
	// applies: one span per load-apply-save pass, in the trace of its run
	// (package tracing; docs/OBSERVABILITY.md), and task invocations
	// carry the span in a traceparent header. Build it with package
	// tracing/provider, whose ids make a run's first span the root of
	// its trace. Default: nil, no tracing, at no cost.
	TracerProvider trace.TracerProvider

	// MaxInputBytes is the largest input body accepted; a larger one is
	// terminated with its size in the reason. Default: 1 MiB (nats-server's
	// default max_payload).
	MaxInputBytes int

	// PayloadThreshold is the largest invocation, status announcement or
	// run record the dispatcher sends or stores inline; a larger one goes
	// to the payload bucket by reference (docs/PROTOCOL.md 2.4). Default:
	// payload.DefaultThreshold (512 KiB).
	PayloadThreshold int
	// MaxPayloadBytes is the largest body a reference may name; a larger
	// one is refused. Default: payload.DefaultMaxBytes (256 MiB).
	MaxPayloadBytes int64

	// Retention is how long a settled run (done, failed, cancelled) is
	// kept before it is removed: its record replaced by a tombstone that
	// lives as long again (at least step.MinTombstone), its history and
	// schedules purged. A deployment's policy may set its own ("$run":
	// {"retention": ...}, docs/POLICY.md). Negative keeps settled runs
	// for ever. A run that waits or runs is never removed. Default:
	// DefaultRetention.
	Retention time.Duration
	// Archive writes a run's record and history to the archive (the
	// Object Store bucket subjects.Names.ArchiveBucket) before retention
	// removes it; status, history and replay read it there. A
	// deployment's policy may say otherwise ("$run": {"archive": ...}).
	// Default: false.
	Archive bool
	// RemovalBucket is how finely removals are batched: the settled runs
	// due in one bucket of this width are removed together at its end,
	// one bucket fire for all of them (reaper.go). A run is removed at most
	// about two widths after its retention ends. Whole seconds. Default:
	// DefaultRemovalBucket.
	RemovalBucket time.Duration
	// OnRemoved, when set, is called after a run's tombstone is written
	// (its history and schedules may still be being purged), with the
	// tombstone: for indexes of runs kept beside the run bucket. It must
	// not block. Default: nil.
	OnRemoved func(removed wire.Removed)
	// CrashHook is a test seam for crash tests outside this package (a
	// dispatcher run as its own process and killed mid-step). When set, it
	// is called at each crash point of a step, CrashAfterSave and
	// CrashAfterPublish, with the run id and input kind. To simulate a
	// crash it ends the process there (os.Exit, SIGKILL), or returns an
	// error: the step then stops as after a kill (the input is left
	// unacknowledged) and the dispatcher handles nothing more until Stop.
	// Never set it in production. Default: nil.
	CrashHook func(point, runID, kind string) error

	// Jobs configures the bulk-job runner every dispatcher runs (package
	// bulk); Jobs.Off turns it off. Its Names, Logger, Clock and OpTimeout
	// default to the dispatcher's. Default: on, bulk's defaults.
	Jobs bulk.Config

	// Index configures the run indexer (package runindex), which a
	// dispatcher runs while it owns partition 0 of a partitioned
	// deployment, and always in an unpartitioned one; Index.Off turns it
	// off in this process. Its Names, Logger, Clock and OpTimeout default
	// to the dispatcher's. Default: on, runindex's defaults.
	Index runindex.Config

	// Schedules configures the schedule runner every dispatcher runs
	// (package schedule): it takes schedule fires and starts their runs;
	// Schedules.Off turns it off in this process. Its Names, Logger,
	// Clock, OpTimeout and AckWait default to the dispatcher's. Default:
	// on.
	Schedules schedule.Config

	// PartitionHeartbeat is how often a dispatcher of a partitioned
	// deployment announces itself to the others (partitions.go); one
	// silent for three of these (killed, cut off) loses its partitions
	// to the others, whose next inputs then wait that long at most.
	// Default: DefaultPartitionHeartbeat.
	PartitionHeartbeat time.Duration

	// hooks lets tests stop a step at a crash point.
	hooks *hooks
}

// Crash points passed to Config.CrashHook.
const (
	// CrashAfterSave is after the run record (with its outbox) is saved
	// and before the outbox is published.
	CrashAfterSave = string(hookAfterSave)
	// CrashAfterPublish is after the outbox is published and before the
	// input is acknowledged.
	CrashAfterPublish = string(hookAfterPublish)
	// CrashAfterTombstone is, in a removal by retention, after the
	// tombstone replaced the record and before the history is purged.
	CrashAfterTombstone = string(hookAfterTombstone)
	// CrashAfterRewind is, in a reset, after the run's earlier state was
	// rebuilt from its history and before anything is saved.
	CrashAfterRewind = string(hookAfterRewind)
)

// DefaultRetention is Config.Retention's default: a week, between
// Temporal's 3 days and Step Functions' 90, long enough to look into a
// failure after a weekend, short enough that the run bucket and the
// input stream stay the size of a week's work.
const DefaultRetention = 7 * 24 * time.Hour

// DefaultRemovalBucket is Config.RemovalBucket's default: ten seconds of
// removals share one fire, and runs are removed within about 20 s of
// their retention's end.
const DefaultRemovalBucket = 10 * time.Second

// DefaultPartitionHeartbeat is Config.PartitionHeartbeat's default: a
// killed dispatcher's partitions move within about 3 s, a tenth of
// DefaultAckWait.
const DefaultPartitionHeartbeat = time.Second

// DefaultAckWait is Config.AckWait's default.
const DefaultAckWait = 30 * time.Second

// DefaultConcurrency is Config.Concurrency's default. A step mostly
// waits on NATS round trips: 128 ran one-task 1.4-1.8 times the runs a
// second of 16 (docs/PERFORMANCE.md, rows 22 and 24). Three dispatchers of 128 in one
// overloaded test process once timed out and retried without end (row
// 23); the step limit (steplimit.go) now backs off when round trips
// time out (row 24).
const DefaultConcurrency = 128

// Settings are the fields that shape records: a replay of the runs must share them.
func (c Config) Settings() step.Settings {
	return step.Settings{
		Names: c.Names, Tokens: c.Tokens, AppliedHistory: c.AppliedHistory,
		RejectedHistory: c.RejectedHistory, MaxInputBytes: c.MaxInputBytes,
	}
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	setDefault(&c.Concurrency, DefaultConcurrency)
	setDefault(&c.AckWait, DefaultAckWait)
	setDefault(&c.MaxAckPending, 65536)
	setDefault(&c.MaxQueuedBytes, 64<<20)
	setDefault(&c.AppliedHistory, step.DefaultAppliedHistory)
	setDefault(&c.RejectedHistory, step.DefaultRejectedHistory)
	setDefault(&c.ConflictTimeout, 10*time.Second)
	setDefault(&c.OpTimeout, 5*time.Second)
	setDefault(&c.RetryDelay, 250*time.Millisecond)
	setDefault(&c.MaxRetryDelay, 30*time.Second)
	setDefault(&c.UnknownRunWait, max(2*c.AckWait, time.Minute))
	setDefault(&c.MaxEarlyInputs, 128)
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.CacheSize == 0 {
		c.CacheSize = 4096
	}
	setDefault(&c.DefinitionCacheSize, registry.DefaultCacheSize)
	setDefault(&c.MaxInputBytes, step.DefaultMaxInputBytes)
	if c.Jobs.Names == (subjects.Names{}) {
		c.Jobs.Names = c.Names
	}
	if c.Jobs.Logger == nil {
		c.Jobs.Logger = c.Logger
	}
	if c.Jobs.Clock == nil {
		c.Jobs.Clock = c.Clock
	}
	setDefault(&c.Jobs.OpTimeout, c.OpTimeout)
	if c.Schedules.Names == (subjects.Names{}) {
		c.Schedules.Names = c.Names
	}
	if c.Schedules.Logger == nil {
		c.Schedules.Logger = c.Logger
	}
	if c.Schedules.Clock == nil {
		c.Schedules.Clock = c.Clock
	}
	setDefault(&c.Schedules.OpTimeout, c.OpTimeout)
	setDefault(&c.Schedules.AckWait, c.AckWait)
	if c.Index.Names == (subjects.Names{}) {
		c.Index.Names = c.Names
	}
	if c.Index.Logger == nil {
		c.Index.Logger = c.Logger
	}
	if c.Index.Clock == nil {
		c.Index.Clock = c.Clock
	}
	setDefault(&c.Index.OpTimeout, c.OpTimeout)
	setDefault(&c.Retention, DefaultRetention)
	setDefault(&c.RemovalBucket, DefaultRemovalBucket)
	setDefault(&c.PartitionHeartbeat, DefaultPartitionHeartbeat)
	return c
}

func setDefault[T int | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

func (c Config) validate() error {
	var errs []error
	positive := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	positive("Concurrency", c.Concurrency > 0)
	positive("AckWait", c.AckWait > 0)
	positive("MaxAckPending", c.MaxAckPending > 0)
	positive("MaxQueuedBytes", c.MaxQueuedBytes > 0)
	positive("AppliedHistory", c.AppliedHistory > 0)
	positive("RejectedHistory", c.RejectedHistory > 0)
	positive("ConflictTimeout", c.ConflictTimeout > 0)
	positive("OpTimeout", c.OpTimeout > 0)
	positive("RetryDelay", c.RetryDelay > 0)
	positive("DefinitionCacheSize", c.DefinitionCacheSize > 0)
	positive("UnknownRunWait", c.UnknownRunWait > 0)
	positive("MaxEarlyInputs", c.MaxEarlyInputs > 0)
	positive("MaxInputBytes", c.MaxInputBytes > 0)
	positive("PartitionHeartbeat", c.PartitionHeartbeat > 0)
	if c.Retention > 0 && c.Retention < time.Second {
		errs = append(errs, fmt.Errorf("Retention %s is below a second (a negative Retention keeps settled runs for ever)", c.Retention)) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	if c.RemovalBucket < time.Second || c.RemovalBucket%time.Second != 0 {
		errs = append(errs, fmt.Errorf("RemovalBucket %s is not a whole number of seconds", c.RemovalBucket))
	}
	if c.MaxRetryDelay < c.RetryDelay {
		errs = append(errs, fmt.Errorf("MaxRetryDelay (%s) is shorter than RetryDelay (%s)", c.MaxRetryDelay, c.RetryDelay))
	}
	if c.MaxAckPending < c.Concurrency {
		errs = append(errs, fmt.Errorf("MaxAckPending (%d) is below Concurrency (%d): some workers could never get a message", c.MaxAckPending, c.Concurrency))
	}
	if c.Names == (subjects.Names{}) {
		errs = append(errs, errors.New("Names is unset (use subjects.New or WithDefaults)")) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dispatcher config: %w", err)
	}
	return nil
}
