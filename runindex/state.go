package runindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// markOff leaves the index's off mark: this dispatcher keeps no index,
// so listings must scan the run records (client.ListRuns reads the mark).
func markOff(ctx context.Context, js jetstream.JetStream, n subjects.Names, by string, since time.Time) error {
	body, err := json.Marshal(wire.IndexOff{Since: since.UTC().Format(time.RFC3339Nano), By: by})
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, n.IndexOff(), body); err != nil {
		return fmt.Errorf("runindex: leave the off mark %q: %w", n.IndexOff(), err)
	}
	return nil
}

// clearOff removes the off mark: an indexer keeps the index again.
func clearOff(ctx context.Context, s jetstream.Stream, n subjects.Names) error {
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(n.IndexOff())); err != nil {
		return fmt.Errorf("runindex: remove the off mark %q: %w", n.IndexOff(), err)
	}
	return nil
}

// Rebuild makes the dispatchers index every run again from the run
// bucket: it empties the index stream of its entries, then deletes the indexers' shared
// consumer; each indexer creates it again (within a second or two), and
// a new consumer starts with the latest record of every run (its
// backfill). The dispatchers do the work, so it is as durable as the
// indexing itself: it survives this process and any dispatcher ending,
// and goes on from the consumer's acknowledgements. Until it is done a
// listing misses the runs not yet indexed and says how many changes the
// index is behind. It refuses when the deployment's index is off
// (client.ErrIndexOff) or not provisioned (client.ErrNoIndex).
func Rebuild(ctx context.Context, js jetstream.JetStream, n subjects.Names) error {
	s, err := js.Stream(ctx, n.IndexStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("runindex: rebuild: %w: stream %q does not exist (provision the deployment again: jetflow serve --provision)", client.ErrNoIndex, n.IndexStream())
	}
	if err != nil {
		return fmt.Errorf("runindex: rebuild: %w", err)
	}
	if off, err := client.ReadIndexOff(ctx, js, n); err != nil || off != nil {
		if err == nil {
			err = fmt.Errorf("%w since %s (dispatcher %s): start the dispatchers with the index on, which rebuilds what changed meanwhile", client.ErrIndexOff, off.Since, off.By)
		}
		return fmt.Errorf("runindex: rebuild: %w", err)
	}
	return rebuild(ctx, js, s, n)
}

// rebuild leaves the shape mark, empties the index stream of every entry
// and head, then deletes the indexers' shared consumer. The marks stay,
// so that a listing meanwhile still knows the index is on and of this
// shape (it says how far behind it is). Emptied first: an entry an
// indexer writes between the steps is a record's latest, which the new
// consumer writes again anyway; the other order could purge what a new
// consumer already wrote.
func rebuild(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, n subjects.Names) error {
	if err := provision.MarkIndexShape(ctx, js, n); err != nil {
		return fmt.Errorf("runindex: rebuild: %w", err)
	}
	for _, f := range n.IndexRuns() {
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(f)); err != nil {
			return fmt.Errorf("runindex: rebuild: purge %q of stream %q: %w", f, n.IndexStream(), err)
		}
	}
	err := js.DeleteConsumer(ctx, n.KVStream(n.RunBucket()), n.IndexerConsumer())
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("runindex: rebuild: delete consumer %q of stream %q: %w", n.IndexerConsumer(), n.KVStream(n.RunBucket()), err)
	}
	return nil
}

// reshape rebuilds an index whose shape mark names another shape than
// this code's, or that has none (an index written before the mark, whose
// entries listings of this version do not read): every run is indexed
// again, as by Rebuild. Until then listings read the run records
// (client.ErrNoIndex). It returns whether it rebuilt.
func reshape(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, n subjects.Names) (bool, error) {
	shape, err := client.ReadIndexShape(ctx, js, n)
	if err != nil || shape == subjects.IndexShape {
		return false, err
	}
	// A new deployment's empty index only needs the mark.
	info, err := kvstore.LeaderInfo(ctx, s)
	if err != nil {
		return false, fmt.Errorf("runindex: read stream %q: %w", n.IndexStream(), err)
	}
	if info.State.Msgs == 0 {
		return false, provision.MarkIndexShape(ctx, js, n)
	}
	return true, rebuild(ctx, js, s, n)
}

// Progress is how far the dispatchers are in keeping the index.
type Progress struct {
	// Started is false while no dispatcher has created the indexers'
	// consumer (after a rebuild, until one does).
	Started bool
	// Left is how many run changes the indexers have not indexed yet.
	Left uint64
}

// ReadProgress reads the indexers' consumer.
func ReadProgress(ctx context.Context, js jetstream.JetStream, n subjects.Names) (Progress, error) {
	c, err := js.Consumer(ctx, n.KVStream(n.RunBucket()), n.IndexerConsumer())
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return Progress{}, nil
	}
	if err != nil {
		return Progress{}, fmt.Errorf("runindex: read consumer %q: %w", n.IndexerConsumer(), err)
	}
	info := c.CachedInfo()
	return Progress{Started: true, Left: info.NumPending + uint64(info.NumAckPending)}, nil //nolint:gosec // a count
}
