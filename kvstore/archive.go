package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrNotArchived: the archive holds no object for the run (never
// archived, or past the archive's TTL).
var ErrNotArchived = errors.New("run not archived")

// ArchiveStore is the archive of runs removed by retention: one object
// per run id in the Object Store bucket subjects.Names.ArchiveBucket,
// holding a wire.Archived.
type ArchiveStore struct {
	obs  jetstream.ObjectStore
	name string
}

// OpenArchive binds the archive bucket; ErrNotProvisioned when it is
// missing.
func OpenArchive(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*ArchiveStore, error) {
	name := names.ArchiveBucket()
	obs, err := js.ObjectStore(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("kvstore: archive bucket %q: %w", name, ErrNotProvisioned)
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: bind archive bucket %q: %w", name, err)
	}
	return &ArchiveStore{obs: obs, name: name}, nil
}

// Put writes the run's archive, replacing any earlier one (a removal
// done again after a crash writes it again).
func (a *ArchiveStore) Put(ctx context.Context, ar *wire.Archived) error {
	if err := subjects.CheckRunID(ar.Removed.Run); err != nil {
		return fmt.Errorf("kvstore: archive run: %w", err)
	}
	data, err := json.Marshal(ar)
	if err != nil {
		return fmt.Errorf("kvstore: encode the archive of run %s: %w", ar.Removed.Run, err)
	}
	if _, err := a.obs.PutBytes(ctx, ar.Removed.Run, data); err != nil {
		return fmt.Errorf("kvstore: write the archive of run %s to %q: %w", ar.Removed.Run, a.name, err)
	}
	return nil
}

// Get reads the run's archive; ErrNotArchived when there is none.
func (a *ArchiveStore) Get(ctx context.Context, runID string) (*wire.Archived, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("kvstore: read archive: %w", err)
	}
	data, err := a.obs.GetBytes(ctx, runID)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("kvstore: run %s in %q: %w", runID, a.name, ErrNotArchived)
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: read the archive of run %s from %q: %w", runID, a.name, err)
	}
	var ar wire.Archived
	if err := json.Unmarshal(data, &ar); err != nil {
		return nil, fmt.Errorf("kvstore: the archive of run %s in %q does not decode: %w", runID, a.name, err)
	}
	return &ar, nil
}
