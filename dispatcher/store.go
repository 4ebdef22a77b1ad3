package dispatcher

import (
	"context"

	"github.com/jetflow/jetflow/kvstore"
)

// Store errors the dispatcher branches on (kvstore's sentinels).
var (
	// ErrRunNotFound: no record exists for the run.
	ErrRunNotFound = kvstore.ErrRunNotFound
	// ErrRunExists: Create found a record already there.
	ErrRunExists = kvstore.ErrRunExists
	// ErrStale: Update lost a compare-and-swap race.
	ErrStale = kvstore.ErrStale
)

// RunStore keeps run records by run id with compare-and-swap writes;
// *kvstore.RunStore is the production one.
type RunStore interface {
	// Get returns the record bytes and revision, or an error wrapping
	// ErrRunNotFound. kvstore.FromLeader reads through the stream leader.
	Get(ctx context.Context, runID string, opts ...kvstore.ReadOption) ([]byte, uint64, error)
	// Create stores the first record of a run, or fails with ErrRunExists.
	Create(ctx context.Context, runID string, data []byte) (uint64, error)
	// Update replaces the record at revision rev, or fails with ErrStale.
	Update(ctx context.Context, runID string, data []byte, rev uint64) (uint64, error)
}
