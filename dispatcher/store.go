package dispatcher

import (
	"context"

	"github.com/jetflow/jetflow/kvstore"
)

// RunStore keeps run records by run id with compare-and-swap writes;
// *kvstore.RunStore is the production one.
type RunStore interface {
	// Get returns the record bytes and revision, or an error wrapping
	// kvstore.ErrRunNotFound. kvstore.FromLeader reads through the stream leader.
	Get(ctx context.Context, runID string, opts ...kvstore.ReadOption) ([]byte, uint64, error)
	// Create stores the first record of a run, or fails with kvstore.ErrRunExists.
	Create(ctx context.Context, runID string, data []byte) (uint64, error)
	// Update replaces the record at revision rev, or fails with kvstore.ErrStale.
	Update(ctx context.Context, runID string, data []byte, rev uint64) (uint64, error)
}
