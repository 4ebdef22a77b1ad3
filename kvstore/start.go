package kvstore

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// LastStart is a run's last start message in the input stream inputs,
// on whichever subject it is stored (subjects.Names.StoredStarts: a
// partitioned stream stores it in the run's partition, or, for a run
// started before the stream was partitioned, on the published subject).
// It is jetstream.ErrMsgNotFound when the stream holds none.
func LastStart(ctx context.Context, inputs jetstream.Stream, names subjects.Names, runID string) (*jetstream.RawStreamMsg, error) {
	partitions := subjects.PartitionCount(inputs.CachedInfo().Config.Metadata)
	var err error
	for _, subject := range names.StoredStarts(runID, partitions) {
		var m *jetstream.RawStreamMsg
		if m, err = inputs.GetLastMsgForSubject(ctx, subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
			return m, err
		}
	}
	return nil, err
}
