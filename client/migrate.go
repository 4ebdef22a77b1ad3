package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrMigrateRefused is wrapped by Migrated when the run refused its
// migration; the error names the reason its record holds.
var ErrMigrateRefused = errors.New("migration refused")

// OpMigrate is the bulk operation that moves waiting and running runs
// onto another revision of their workflow when their own history proves
// the move invisible (docs/REVISIONS.md): `jetflow migrate`. A
// dispatcher's job runner checks each run and publishes its migration
// (bulk.Config.Migrate); the job's Revision names the revision.
const OpMigrate = "migrate"

// ErrMigrateLocal: a migration is checked and sent by the dispatchers'
// job runner, never published by a bulk operation's client.
var ErrMigrateLocal = errors.New("a migration is checked and sent by the dispatchers (a job runner with Migrate set)")

// Migrate publishes a run's migration. key makes its Nats-Msg-Id
// deterministic ("" for a random one), so that the same migration sent
// twice within the input stream's duplicate window is stored once. It
// returns the input's stream sequence, which Migrated waits for.
func (c *Client) Migrate(ctx context.Context, runID string, body wire.Migrate, key string) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("client: migrate: %w", err)
	}
	if body.From == "" || body.To == "" {
		return 0, errors.New("client: migrate: the revisions to move from and to are both required")
	}
	return c.publishSeq(ctx, c.names.Migrate(runID), msgID(subjects.KindMigrate, runID, key), body)
}

// Migrated waits until the dispatchers have taken the migration at
// stream sequence seq and returns the run's status after it. A refused
// migration returns an error wrapping ErrMigrateRefused with the
// recorded reason.
func (c *Client) Migrated(ctx context.Context, runID string, seq uint64) (*wire.Status, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("client: migrated: %w", err)
	}
	return c.takenAt(ctx, runID, seq, "migration", ErrMigrateRefused)
}
