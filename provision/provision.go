// Package provision owns every JetStream configuration jetflow creates:
// the input, timer, task, audit and schedule streams, the run and workflow buckets
// (Provision), the dispatchers' durable consumer and the task versions'
// consumers, and the migration of an input stream made by an older
// jetflow (MigrateInputStream). Nothing else in jetflow creates or
// changes a stream, bucket or durable consumer; the stores (package
// kvstore, package registry) and the workers only bind what it made
// (except a worker's development-only CreateConsumers, which creates the
// same task consumer, as this package's tests check).
package provision

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrNotProvisioned is wrapped by the errors of the stores (kvstore,
// registry) when a stream or bucket is missing: run Provision. It is
// kvstore.ErrNotProvisioned, which the stores return.
var ErrNotProvisioned = kvstore.ErrNotProvisioned

// DefaultDuplicateWindow is how long JetStream remembers a Nats-Msg-Id to
// drop a re-published duplicate (the server's own default).
const DefaultDuplicateWindow = 2 * time.Minute

// ProvisionOptions shape the streams and buckets Provision creates.
type ProvisionOptions struct {
	// Replicas of every stream and bucket: 1 on a single server, 3 on a
	// cluster. Default 1.
	Replicas int
	// Storage of every stream and bucket. Default jetstream.FileStorage.
	Storage jetstream.StorageType
	// MaxAge is how long the input stream keeps run history. Pending
	// timers do not depend on it: they wait in the timer stream, which
	// has no MaxAge. Default 0 (forever).
	MaxAge time.Duration
	// DuplicateWindow is how long a Nats-Msg-Id de-duplicates publishes to
	// the input, timer and task streams; capped at MaxAge when MaxAge is
	// set. Default DefaultDuplicateWindow (2m).
	DuplicateWindow time.Duration
	// ErasableHistory lets operators purge and delete messages of the
	// input stream (to erase a person's data, or in tests that lose
	// history on purpose). By default the stream denies both, a setting
	// the server never lets anyone undo, so that history only ages out
	// (MaxAge). Default false.
	ErasableHistory bool
	// MaxMsgSize caps each stream message and each bucket value, in bytes.
	// Default 0 (the server's max payload, 1 MiB unless configured).
	MaxMsgSize int32
	// RunHistory is how many revisions of each run the run bucket keeps
	// (1..64). Default 1.
	RunHistory uint8
	// ArchiveMaxAge is how long the archive keeps a run removed by
	// retention with an archive (the Object Store bucket's TTL). Default
	// DefaultArchiveMaxAge (90 days).
	ArchiveMaxAge time.Duration
	// AuditMaxAge is how long the audit stream keeps an entry. Default
	// DefaultAuditMaxAge (400 days).
	AuditMaxAge time.Duration
	// RetryFor bounds how long transient errors are retried (a cluster
	// still electing its leader). Default kvstore.DefaultRetryFor (30s).
	RetryFor time.Duration
	// Partitions is how many partitions a new input stream routes run
	// inputs to, by run id (subjects/partition.go); negative makes it
	// unpartitioned. It is recorded in the stream and fixed: an existing
	// stream keeps its count, another count is an error wrapping
	// ErrPartitions, and an unpartitioned stream is partitioned by
	// MigratePartitions. At most subjects.MaxPartitions. Default 0: an
	// existing stream's count, DefaultPartitions for a new one.
	Partitions int
}

func (o ProvisionOptions) withDefaults() ProvisionOptions {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.DuplicateWindow == 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.MaxAge > 0 && o.DuplicateWindow > o.MaxAge {
		// The server refuses a duplicate window longer than MaxAge.
		o.DuplicateWindow = o.MaxAge
	}
	if o.RunHistory == 0 {
		o.RunHistory = 1
	}
	if o.RetryFor <= 0 {
		o.RetryFor = kvstore.DefaultRetryFor
	}
	if o.ArchiveMaxAge <= 0 {
		o.ArchiveMaxAge = DefaultArchiveMaxAge
	}
	if o.AuditMaxAge <= 0 {
		o.AuditMaxAge = DefaultAuditMaxAge
	}
	return o
}

func (o ProvisionOptions) validate() error {
	switch {
	case o.Replicas < 1 || o.Replicas > 5:
		return fmt.Errorf("provision: Replicas is %d; use 1 to 5 (1 on one server, 3 on a cluster)", o.Replicas)
	case o.Storage != jetstream.FileStorage && o.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("provision: Storage %v is neither file nor memory", o.Storage)
	case o.MaxAge < 0 || o.DuplicateWindow < 0:
		return errors.New("provision: MaxAge and DuplicateWindow must not be negative")
	case o.MaxMsgSize < 0:
		return errors.New("provision: MaxMsgSize must not be negative (0 means the server's max payload)")
	case o.Partitions > subjects.MaxPartitions:
		return fmt.Errorf("provision: Partitions is %d; the most is %d", o.Partitions, subjects.MaxPartitions)
	case o.RunHistory > jetstream.KeyValueMaxHistory:
		return fmt.Errorf("provision: RunHistory is %d; the most a bucket keeps is %d", o.RunHistory, jetstream.KeyValueMaxHistory)
	}
	return nil
}

func checkNames(names subjects.Names) error {
	if names.Prefix() == "" {
		return errors.New("provision: subjects.Names is the zero value; build it with subjects.New")
	}
	return nil
}

// FiredTimerTTL is wire.FiredTimerTTL. The copy in the input stream
// carries the same Nats-TTL header but stays as long as the history:
// that stream does not allow per-message TTLs.
const FiredTimerTTL = wire.FiredTimerTTL

// InputStreamConfig is the input stream: every message a run consumes,
// its history, in opts.Partitions partitions (DefaultPartitions for 0,
// none for a negative count; partitions.go). Limits retention keeps the history for replay; direct gets
// are on for fast history reads.
//
// Anyone allowed to publish one input may put any header on it, so the
// stream allows none of the headers that act on other messages: no
// roll-ups, message schedules, per-message TTLs, counters or batches
// (all off), and it denies deletes unless opts.ErasableHistory. Purges
// are allowed by the stream, so that retention can erase a removed run's
// history, but only through the API request STREAM.PURGE, which only the
// dispatcher role may send (docs/SECURITY.md); a header can purge
// nothing while roll-ups are off. (A stream made before retention denies
// purges, which the server never lets anyone undo: Provision keeps that,
// and retention then keeps history, see KeepsDeniedPurge.) Fired timers
// (removals among them) are copied in from the timer stream by a source
// whose subject transform turns Fired(run) into Timer(run), so nobody
// publishes on a timer subject. Beside the inputs, outside InputAll, the
// stream keeps the runs' sequence pages (subjects.Names.PagesAll), which
// only dispatchers publish and which are kept and purged with the
// history they name.
func InputStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	cfg := jetstream.StreamConfig{
		Name:        names.InputStream(),
		Description: "jetflow run inputs (history); fired timers sourced from " + names.TimerStream(),
		Subjects:    []string{names.InputAll(), names.PagesAll()},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      opts.MaxAge,
		MaxMsgSize:  maxMsgSize(opts.MaxMsgSize),
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  opts.DuplicateWindow,
		DenyDelete:  !opts.ErasableHistory,
		AllowDirect: true,
		// Removals come in through the timers' source too: changing its
		// transforms would make the server copy every fired timer still in
		// the timer stream again, and a second source of the same stream
		// was measured to miss fires across a leader change (3 nodes).
		Sources: []*jetstream.StreamSource{{
			Name: names.TimerStream(),
			SubjectTransforms: []jetstream.SubjectTransformConfig{
				{Source: names.FiredAll(), Destination: names.FiredToTimer()},
			},
		}},
	}
	// The stream's transform applies to sourced timers too (after the
	// source's): a timer lands in its run's partition.
	partitions := opts.Partitions
	if partitions == 0 {
		partitions = DefaultPartitions
	}
	partitionStream(&cfg, names, partitions)
	return cfg
}

// TimerStreamConfig is the timer stream: pending timer schedules, one per
// subject, and the timers they fire, which the input stream copies; the
// same for settled runs' removal schedules (subjects.Names.Expiry), which
// fire on the run's timer subject, and batched removal's due entries and
// bucket schedules (subjects.Names.ReapAll). Only
// dispatchers publish here. Schedules need Limits retention (an ack on a
// work-queue stream would delete them), DiscardOld (the server refuses
// schedules with DiscardNew), roll-ups (a schedule replaces its subject)
// and no MaxAge (which would delete a long timer before it fires). Fired
// timers expire after FiredTimerTTL, hence per-message TTLs.
func TimerStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:              names.TimerStream(),
		Description:       "jetflow timer schedules and fired timers (dispatchers only)",
		Subjects:          []string{names.ScheduleAll(), names.FiredAll(), names.ReapAll(), names.HoldAll(), names.ReleaseAll()},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgSize:        maxMsgSize(opts.MaxMsgSize),
		Storage:           opts.Storage,
		Replicas:          opts.Replicas,
		Duplicates:        opts.DuplicateWindow,
		AllowMsgSchedules: true,
		// The server turns roll-ups on for schedules itself; saying it
		// keeps updates idempotent.
		AllowRollup: true,
		AllowMsgTTL: true,
	}
}

// TaskStreamConfig is the task stream: invocations wait here until a
// worker acknowledges them (work-queue retention deletes them on ack).
// Each task version has its own durable consumer with a distinct filter,
// which a work-queue stream requires.
func TaskStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:        names.TaskStream(),
		Description: "jetflow task invocations awaiting workers",
		Subjects:    []string{names.TaskAll()},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardOld,
		// Invocations expire a little after their attempt's deadline
		// (dispatcher/effects.go): one that ran out of deliveries would
		// otherwise stay in the work queue for good.
		AllowMsgTTL: true,
		MaxMsgSize:  maxMsgSize(opts.MaxMsgSize),
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  opts.DuplicateWindow,
		// Invocations a task version's rate limit held back are
		// produced in the timer stream at their slots (a schedule's
		// target is in its own stream) and copied here onto their task
		// subjects (docs/POLICY.md#rate-limits).
		Sources: []*jetstream.StreamSource{{
			Name: names.TimerStream(),
			SubjectTransforms: []jetstream.SubjectTransformConfig{
				{Source: names.ReleaseAll(), Destination: names.ReleaseToTask()},
			},
		}},
	}
}

// QueueStreamConfig is the queue stream: invocations of the task versions
// whose policy gives them a priority or a fairness key wait here until a
// dispatcher admits them onto the task subject, in their order, and
// deletes them (docs/POLICY.md#priority-and-fairness). Limits retention:
// the admitting dispatcher reads the whole queue, in any order, and
// deletes what it moved. Queued invocations expire, as on the task
// stream, a little after their attempt's deadline. Only dispatchers use
// it.
func QueueStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:        names.QueueStream(),
		Description: "jetflow task invocations queued by priority and fairness key (dispatchers only)",
		Subjects:    []string{names.QueueAll()},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		AllowMsgTTL: true,
		MaxMsgSize:  maxMsgSize(opts.MaxMsgSize),
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  opts.DuplicateWindow,
	}
}

// LimitsBucketConfig is the KV bucket of the task versions' rate limit
// state: one key per rate-limited task version, the theoretical arrival
// time of its next invocation, which the dispatchers move forward with
// compare-and-swap (dispatcher/limit.go). Only dispatchers write it.
func LimitsBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      names.LimitsBucket(),
		Description: "jetflow rate limit state, one key per rate-limited task version",
		History:     1,
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// StartKeyWindow is the idempotency window of starts: the TTL of the
// start key bucket (startctl.Window).
const StartKeyWindow = 24 * time.Hour

// StartKeyBucketConfig is the KV bucket of start idempotency keys, the
// debounce keys' latest starts and the decisions on starts that did not
// start their run (package startctl), each kept StartKeyWindow. Only
// dispatchers write it; clients read the decisions.
func StartKeyBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      names.StartKeyBucket(),
		Description: "jetflow start idempotency keys, debounce marks and decisions on starts (24 h)",
		History:     1,
		TTL:         StartKeyWindow,
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// SingletonBucketConfig is the KV bucket of singleton keys, one key per
// singleton key naming the run that holds it; only dispatchers write it.
func SingletonBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      names.SingletonBucket(),
		Description: "jetflow singleton keys: the run holding each",
		History:     1,
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// TriggerBucketConfig is the KV bucket of deployed triggers, one trigger
// file per workflow (package trigger): the operator's deploy writes it,
// the dispatchers' trigger runners read and watch it.
func TriggerBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      names.TriggerBucket(),
		Description: "jetflow triggers, one trigger file per workflow",
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// RunBucketConfig is the KV bucket of run state, one key per run id.
// Per-key TTLs are on (LimitMarkerTTL) for the tombstones of runs removed
// by retention, which expire; only dispatchers write the bucket.
func RunBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:         names.RunBucket(),
		Description:    "jetflow run state, one key per run",
		History:        opts.RunHistory,
		MaxValueSize:   maxMsgSize(opts.MaxMsgSize),
		Storage:        opts.Storage,
		Replicas:       opts.Replicas,
		LimitMarkerTTL: TombstoneMarkerTTL,
	}
}

// DefaultArchiveMaxAge is ProvisionOptions.ArchiveMaxAge's default:
// archives are for looking into a run long after it was removed, a
// quarter of a year.
const DefaultArchiveMaxAge = 90 * 24 * time.Hour

// ArchiveBucketConfig is the Object Store bucket of archived runs, one
// object per run id, each kept ArchiveMaxAge; only dispatchers write it.
func ArchiveBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.ObjectStoreConfig {
	opts = opts.withDefaults()
	return jetstream.ObjectStoreConfig{
		Bucket:      names.ArchiveBucket(),
		Description: "jetflow runs removed by retention: record and history, one object per run",
		TTL:         opts.ArchiveMaxAge,
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// PayloadBucketConfig is the Object Store bucket of payloads that travel
// by reference (package payload): clients and workers write the bodies of
// their large messages, dispatchers those of large invocations and run
// records. It has no TTL: a payload lives as long as its run, and
// retention removes it with the run.
func PayloadBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.ObjectStoreConfig {
	opts = opts.withDefaults()
	return jetstream.ObjectStoreConfig{
		Bucket:      names.PayloadBucket(),
		Description: "jetflow payloads by reference: large run inputs, events, invocations, results and run records",
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
	}
}

// TombstoneMarkerTTL is how long the run bucket keeps the marker a
// tombstone leaves when it expires (watchers see the key go).
const TombstoneMarkerTTL = time.Minute

// WorkflowBucketConfig is the KV bucket of deployed workflows. Documents
// are never overwritten, so one revision per key is enough.
func WorkflowBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:       names.WorkflowBucket(),
		Description:  "jetflow deployed workflow documents and their revisions",
		History:      1,
		MaxValueSize: maxMsgSize(opts.MaxMsgSize),
		Storage:      opts.Storage,
		Replicas:     opts.Replicas,
	}
}

// JobBucketConfig is the KV bucket of bulk jobs, one key per job. A job's
// record is rewritten at every checkpoint by compare-and-swap; one
// revision per key is enough. Per-key TTLs are on (LimitMarkerTTL) so
// that the purge marker of a settled job removed after its retention
// (bulk.Config.JobRetention) expires too.
func JobBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:         names.JobBucket(),
		Description:    "jetflow bulk jobs: spec and progress, one key per job",
		History:        1,
		Storage:        opts.Storage,
		Replicas:       opts.Replicas,
		LimitMarkerTTL: TombstoneMarkerTTL,
	}
}

func maxMsgSize(n int32) int32 {
	if n == 0 {
		return -1 // unlimited: the server's max payload applies
	}
	return n
}

// DefaultAttemptTimeout bounds one create or update request of Provision.
const DefaultAttemptTimeout = 5 * time.Second

// Provision creates or updates every stream and bucket jetflow uses so
// that they match opts. It is idempotent and safe to run from several
// processes at once; transient cluster errors are retried with backoff.
// Settings the server cannot change in place (such as Storage) are
// reported as errors naming the stream. An input stream made before the
// timer stream existed is refused with an *InputStreamError, and nothing
// is changed: see MigrateInputStream. An input stream keeps the
// partitions it was made with (ProvisionOptions.Partitions).
func Provision(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts ProvisionOptions) error {
	return provision(ctx, js, names, opts, false)
}

// provision is Provision; migrate lets it partition an unpartitioned
// input stream (MigratePartitions).
func provision(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts ProvisionOptions, migrate bool) error {
	if err := checkNames(names); err != nil {
		return err
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	// Before anything else: an old input stream also holds the schedule
	// subjects, so the timer stream could not be created beside it.
	// One read of the input stream serves every question about it.
	existing, err := bindStream(ctx, js, names.InputStream(), opts.RetryFor)
	if err != nil {
		return err
	}
	if existing != nil && existing.CachedInfo().Config.AllowMsgSchedules {
		return unsafeInput(ctx, existing, names)
	}
	if opts.Partitions, err = resolvePartitions(existing, names, opts, migrate); err != nil {
		return err
	}
	if opts.Partitions == 0 {
		opts.Partitions = -1 // unpartitioned, not the default
	}
	input := InputStreamConfig(names, opts)
	// KeepsDeniedPurge, from the read above.
	input.DenyPurge = existing != nil && existing.CachedInfo().Config.DenyPurge
	// The timer stream first: the input stream sources from it.
	newIndex := false // an index stream that never held a message
	for _, cfg := range []jetstream.StreamConfig{TimerStreamConfig(names, opts), input, TaskStreamConfig(names, opts), IndexStreamConfig(names, opts), AuditStreamConfig(names, opts), ScheduleStreamConfig(names, opts), QueueStreamConfig(names, opts)} {
		err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error {
			s, err := js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = js.UpdateStream(ctx, cfg)
			}
			if err == nil && cfg.Name == names.IndexStream() {
				newIndex = s.CachedInfo().State.LastSeq == 0
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("provision: provision stream %q (subjects %v): %w", cfg.Name, cfg.Subjects, err)
		}
	}
	if newIndex {
		// One that ever held a message is left to its indexers, which
		// rebuild an index of another shape.
		if err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error { return MarkIndexShape(ctx, js, names) }); err != nil {
			return fmt.Errorf("provision: %w", err)
		}
	}
	for _, cfg := range []jetstream.KeyValueConfig{
		RunBucketConfig(names, opts), WorkflowBucketConfig(names, opts), JobBucketConfig(names, opts), LimitsBucketConfig(names, opts),
		StartKeyBucketConfig(names, opts), SingletonBucketConfig(names, opts), TriggerBucketConfig(names, opts),
	} {
		err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				_, err = js.UpdateKeyValue(ctx, cfg)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("provision: provision bucket %q: %w", cfg.Bucket, err)
		}
	}
	for _, cfg := range []jetstream.ObjectStoreConfig{ArchiveBucketConfig(names, opts), PayloadBucketConfig(names, opts)} {
		err = ensure(ctx, opts.RetryFor, func(ctx context.Context) error {
			_, err := js.CreateObjectStore(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				_, err = js.UpdateObjectStore(ctx, cfg)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("provision: provision object store %q: %w", cfg.Bucket, err)
		}
	}
	return nil
}

// KeepsDeniedPurge reports whether the input stream exists and denies
// purges: one made before retention did, unless ErasableHistory, and the
// server refuses to undo it. Retention then removes a run's record and
// schedules but not its history, which stays until the stream's MaxAge;
// MigrateInputStream replaces such a stream by one that allows purges.
func KeepsDeniedPurge(ctx context.Context, js jetstream.JetStream, names subjects.Names, retryFor time.Duration) (bool, error) {
	s, err := bindStream(ctx, js, names.InputStream(), retryFor)
	if err != nil || s == nil {
		return false, err
	}
	return s.CachedInfo().Config.DenyPurge, nil
}

// errAgain marks a refusal that a later attempt can get past.
var errAgain = errors.New("passing refusal")

// ensure retries one create-or-update, each attempt bounded by
// DefaultAttemptTimeout. Create comes first on purpose: concurrent
// identical creates are answered normally, while an update racing a create
// of the same stream on a cluster was measured (nats-server 2.15.2) to
// leave both requests without a reply. The attempt timeout turns such a
// lost reply into a retry; both operations are idempotent. An op wraps
// errAgain around a refusal it knows to be passing.
func ensure(ctx context.Context, retryFor time.Duration, op func(context.Context) error) error {
	_, err := kvstore.Retry(ctx, retryFor, func() (struct{}, error) {
		actx, cancel := context.WithTimeout(ctx, DefaultAttemptTimeout)
		defer cancel()
		err := op(actx)
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errAgain) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)) {
			// A lost reply, a stream deleted between create and update, or a passing refusal.
			return struct{}{}, err
		}
		return struct{}{}, kvstore.Classify(err)
	})
	return err
}
