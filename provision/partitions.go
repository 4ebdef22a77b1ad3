package provision

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// DefaultPartitions is ProvisionOptions.Partitions's default for a new
// input stream: enough for 16 dispatchers to own one each, few enough
// that one dispatcher's 16 pulls cost nothing measurable.
const DefaultPartitions = 16

// ErrPartitions is wrapped by Provision's error when ProvisionOptions
// asks for partitions the input stream was not provisioned with: the
// count is fixed once recorded, and an unpartitioned stream is
// partitioned only by MigratePartitions.
var ErrPartitions = errors.New("input stream partitions differ")

// Partitions is the partition count recorded in an input stream's
// configuration (subjects.PartitionsMetadata); 0 when unpartitioned.
func Partitions(cfg jetstream.StreamConfig) int {
	if cfg.SubjectTransform == nil {
		return 0
	}
	return subjects.PartitionCount(cfg.Metadata)
}

// partitionStream adds partitions to an input stream configuration: the
// subject transform that stores each input in its run's partition and
// the recorded count.
func partitionStream(cfg *jetstream.StreamConfig, names subjects.Names, partitions int) {
	if partitions <= 0 {
		return
	}
	src, dst := names.PartitionTransform(partitions)
	cfg.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dst}
	cfg.Metadata = map[string]string{subjects.PartitionsMetadata: strconv.Itoa(partitions)}
	cfg.Description += "; " + strconv.Itoa(partitions) + " partitions by run id"
}

// PartitionConsumerConfig is the durable consumer of partition p of the
// input stream: what DispatcherConsumerConfig is to an unpartitioned
// one, for that partition's inputs only. One dispatcher at a time
// consumes it (package dispatcher, partitions.go), and applies it when it
// takes the partition, so the last one to take it sets ackWait and
// maxAckPending.
func PartitionConsumerConfig(names subjects.Names, p int, ackWait time.Duration, maxAckPending int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       names.PartitionConsumer(p),
		Description:   "jetflow dispatchers: the run inputs of partition " + strconv.Itoa(p),
		FilterSubject: names.PartitionInputs(p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// UnpartitionedConsumerConfig is the shared consumer DispatcherConsumer
// once its input stream is partitioned: it keeps its place and finishes
// the inputs stored before, matching no partitioned one. Every dispatcher
// consumes it while it exists (it is idle once caught up).
func UnpartitionedConsumerConfig(names subjects.Names, ackWait time.Duration, maxAckPending int) jetstream.ConsumerConfig {
	c := DispatcherConsumerConfig(names, ackWait, maxAckPending)
	c.Description = "jetflow dispatchers: run inputs stored before the stream was partitioned"
	c.FilterSubject, c.FilterSubjects = "", names.UnpartitionedInputs()
	return c
}

// resolvePartitions returns the partitions Provision gives the input
// stream: a new one gets opts.Partitions (DefaultPartitions for 0,
// none for a negative count), an existing one keeps what it records,
// and asking for another count is an error wrapping ErrPartitions
// (unless migrate, for an unpartitioned stream: MigratePartitions).
func resolvePartitions(s jetstream.Stream, names subjects.Names, opts ProvisionOptions, migrate bool) (int, error) {
	if s == nil {
		if opts.Partitions == 0 {
			return DefaultPartitions, nil
		}
		return max(opts.Partitions, 0), nil
	}
	had := Partitions(s.CachedInfo().Config)
	switch {
	case opts.Partitions == 0 || opts.Partitions == had || (opts.Partitions < 0 && had == 0):
		return had, nil
	case had == 0 && opts.Partitions > 0 && migrate:
		return opts.Partitions, nil
	case had == 0:
		return 0, fmt.Errorf("provision: %w: input stream %q is unpartitioned and %d partitions were asked for; "+
			"partition it with provision.MigratePartitions (--migrate-partitions), or provision without a partition count",
			ErrPartitions, names.InputStream(), opts.Partitions)
	default:
		return 0, fmt.Errorf("provision: %w: input stream %q was provisioned with %d partitions, which are fixed, and %d were asked for; "+
			"provision without a partition count (or with %d)", ErrPartitions, names.InputStream(), had, opts.Partitions, had)
	}
}

// PartitionMigration says what MigratePartitions did.
type PartitionMigration struct {
	// Partitions is the input stream's partition count afterwards.
	Partitions int
	// Migrated is false when the stream was already partitioned (or
	// new): MigratePartitions only provisioned.
	Migrated bool
	// Unpartitioned is how many inputs stored before were not yet
	// consumed: the shared consumer still hands them out.
	Unpartitioned uint64
}

// MigratePartitions partitions the input stream of an unpartitioned
// deployment into partitions partitions (DefaultPartitions for 0), in
// place, then provisions everything; on a stream partitioned already
// (or none) it only provisions. Stop every dispatcher first, and
// start them again (of this version) after: it refuses while inputs are
// delivered and not acknowledged, and a dispatcher started before knows
// nothing of partitions.
//
// History stays where it is: inputs stored before keep their subjects,
// which every reader of history still matches (subjects.Names.RunInputs),
// and the shared consumer, its filter narrowed to them
// (UnpartitionedConsumerConfig), keeps its place and finishes those not
// yet consumed. Inputs published from then on are stored in their run's
// partition. The steps, in order: narrow the shared consumer; update the
// stream (transform and recorded count). A crash between them leaves an
// unpartitioned stream whose consumer still matches every input it
// stores (they all have the unpartitioned layout): nothing is lost, and
// running MigratePartitions again finishes the job. The window in which a
// dispatcher must not run is the whole migration.
func MigratePartitions(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts ProvisionOptions) (PartitionMigration, error) {
	if err := checkNames(names); err != nil {
		return PartitionMigration{}, err
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return PartitionMigration{}, err
	}
	s, err := bindStream(ctx, js, names.InputStream(), opts.RetryFor)
	if err != nil {
		return PartitionMigration{}, err
	}
	if s == nil || Partitions(s.CachedInfo().Config) > 0 {
		// New, or partitioned already: provisioning is all there is to do.
		if err := Provision(ctx, js, names, opts); err != nil {
			return PartitionMigration{}, err
		}
		s, err = bindStream(ctx, js, names.InputStream(), opts.RetryFor)
		if err != nil || s == nil {
			return PartitionMigration{}, err
		}
		return PartitionMigration{Partitions: Partitions(s.CachedInfo().Config)}, nil
	}
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultPartitions
	}
	m := PartitionMigration{Partitions: opts.Partitions, Migrated: true}
	c, err := s.Consumer(ctx, names.DispatcherConsumer())
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		// No dispatcher ever ran: nothing to finish.
	case err != nil:
		return m, fmt.Errorf("provision: migrate partitions: read consumer %q: %w", names.DispatcherConsumer(), err)
	default:
		info, err := c.Info(ctx)
		if err != nil {
			return m, fmt.Errorf("provision: migrate partitions: read consumer %q: %w", names.DispatcherConsumer(), err)
		}
		if info.NumAckPending > 0 {
			return m, fmt.Errorf("provision: migrate partitions: %d inputs are delivered to dispatchers and not acknowledged "+
				"(consumer %q): stop every dispatcher, then migrate", info.NumAckPending, names.DispatcherConsumer())
		}
		m.Unpartitioned = info.NumPending
		cfg := UnpartitionedConsumerConfig(names, info.Config.AckWait, info.Config.MaxAckPending)
		if _, err := s.CreateOrUpdateConsumer(ctx, cfg); err != nil {
			return m, fmt.Errorf("provision: migrate partitions: narrow consumer %q to the inputs stored before: %w", names.DispatcherConsumer(), err)
		}
	}
	if err := provision(ctx, js, names, opts, true); err != nil {
		return m, fmt.Errorf("provision: migrate partitions (the shared consumer is narrowed; run the migration again): %w", err)
	}
	return m, nil
}
