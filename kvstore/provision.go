package kvstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

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
	// MaxAge is how long the input stream keeps run history. Timers are
	// scheduled messages in that stream, so MaxAge must exceed the longest
	// timer a workflow arms, or the timer is deleted before it fires.
	// Default 0 (forever).
	MaxAge time.Duration
	// DuplicateWindow is how long a Nats-Msg-Id de-duplicates publishes to
	// the input and task streams; capped at MaxAge when MaxAge is set.
	// Default DefaultDuplicateWindow (2m).
	DuplicateWindow time.Duration
	// MaxMsgSize caps each stream message and each bucket value, in bytes.
	// Default 0 (the server's max payload, 1 MiB unless configured).
	MaxMsgSize int32
	// RunHistory is how many revisions of each run the run bucket keeps
	// (1..64). Default 1.
	RunHistory uint8
	// RetryFor bounds how long transient errors are retried (a cluster
	// still electing its leader). Default DefaultRetryFor (30s).
	RetryFor time.Duration
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
		o.RetryFor = DefaultRetryFor
	}
	return o
}

func (o ProvisionOptions) validate() error {
	switch {
	case o.Replicas < 1 || o.Replicas > 5:
		return fmt.Errorf("kvstore: Replicas is %d; use 1 to 5 (1 on one server, 3 on a cluster)", o.Replicas)
	case o.Storage != jetstream.FileStorage && o.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("kvstore: Storage %v is neither file nor memory", o.Storage)
	case o.MaxAge < 0 || o.DuplicateWindow < 0:
		return errors.New("kvstore: MaxAge and DuplicateWindow must not be negative")
	case o.MaxMsgSize < 0:
		return errors.New("kvstore: MaxMsgSize must not be negative (0 means the server's max payload)")
	case o.RunHistory > jetstream.KeyValueMaxHistory:
		return fmt.Errorf("kvstore: RunHistory is %d; the most a bucket keeps is %d", o.RunHistory, jetstream.KeyValueMaxHistory)
	}
	return nil
}

func checkNames(names subjects.Names) error {
	if names.Prefix() == "" {
		return errors.New("kvstore: subjects.Names is the zero value; build it with subjects.New")
	}
	return nil
}

// InputStreamConfig is the input stream: every message a run consumes
// (its history) plus pending timer schedules. Limits retention keeps the
// history for replay; schedules need Limits retention too (an ack on a
// work-queue stream would delete them) and DiscardOld (the server refuses
// schedules with DiscardNew). Direct gets are on for fast history reads.
func InputStreamConfig(names subjects.Names, opts ProvisionOptions) jetstream.StreamConfig {
	opts = opts.withDefaults()
	return jetstream.StreamConfig{
		Name:              names.InputStream(),
		Description:       "jetflow run inputs (history) and timer schedules",
		Subjects:          []string{names.InputAll(), names.ScheduleAll()},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxAge:            opts.MaxAge,
		MaxMsgSize:        maxMsgSize(opts.MaxMsgSize),
		Storage:           opts.Storage,
		Replicas:          opts.Replicas,
		Duplicates:        opts.DuplicateWindow,
		AllowMsgSchedules: true,
		// Schedules are stored as subject roll-ups; the server would turn
		// this on itself, so saying it keeps updates idempotent.
		AllowRollup: true,
		AllowDirect: true,
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
		MaxMsgSize:  maxMsgSize(opts.MaxMsgSize),
		Storage:     opts.Storage,
		Replicas:    opts.Replicas,
		Duplicates:  opts.DuplicateWindow,
	}
}

// RunBucketConfig is the KV bucket of run state, one key per run id.
func RunBucketConfig(names subjects.Names, opts ProvisionOptions) jetstream.KeyValueConfig {
	opts = opts.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:       names.RunBucket(),
		Description:  "jetflow run state, one key per run",
		History:      opts.RunHistory,
		MaxValueSize: maxMsgSize(opts.MaxMsgSize),
		Storage:      opts.Storage,
		Replicas:     opts.Replicas,
	}
}

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
// reported as errors naming the stream.
func Provision(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts ProvisionOptions) error {
	if err := checkNames(names); err != nil {
		return err
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return err
	}
	for _, cfg := range []jetstream.StreamConfig{InputStreamConfig(names, opts), TaskStreamConfig(names, opts)} {
		err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				_, err = js.UpdateStream(ctx, cfg)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("kvstore: provision stream %q (subjects %v): %w", cfg.Name, cfg.Subjects, err)
		}
	}
	for _, cfg := range []jetstream.KeyValueConfig{RunBucketConfig(names, opts), WorkflowBucketConfig(names, opts)} {
		err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				_, err = js.UpdateKeyValue(ctx, cfg)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("kvstore: provision bucket %q: %w", cfg.Bucket, err)
		}
	}
	return nil
}

// ensure retries one create-or-update, each attempt bounded by
// DefaultAttemptTimeout. Create comes first on purpose: concurrent
// identical creates are answered normally, while an update racing a create
// of the same stream on a cluster was measured (nats-server 2.15.2) to
// leave both requests without a reply. The attempt timeout turns such a
// lost reply into a retry; both operations are idempotent.
func ensure(ctx context.Context, retryFor time.Duration, op func(context.Context) error) error {
	_, err := retry(ctx, retryFor, func() (struct{}, error) {
		actx, cancel := context.WithTimeout(ctx, DefaultAttemptTimeout)
		defer cancel()
		err := op(actx)
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)) {
			// A lost reply, or a stream deleted between create and update.
			return struct{}{}, err
		}
		return struct{}{}, classify(err)
	})
	return err
}
