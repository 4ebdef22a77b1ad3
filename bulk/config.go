// Package bulk carries out bulk jobs: a per-run operation (a row of
// client.Operations, such as cancel) applied to every run a filter
// matches. Jobs are records in the job bucket (client.SubmitJob writes
// them); every dispatcher runs a Runner, which takes a runnable job by
// compare-and-swap on its record, holds it under a lease it renews at
// each checkpoint, and publishes the operation for each matching run in
// run id order with a Nats-Msg-Id naming the job and the run. A holder
// that dies leaves its lease to lapse; another resumes after the last
// checkpoint, and the input stream's duplicate window drops what the two
// published twice.
package bulk

import (
	"context"
	"log/slog"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// DefaultJobRetention is Config.JobRetention's default: a week, as the
// runs' default retention.
const DefaultJobRetention = 7 * 24 * time.Hour

// Config configures a Runner. The zero value is usable once passed
// through WithDefaults (New does that).
type Config struct {
	// Off turns the runner off: this process takes no jobs. Default false.
	Off bool
	// Names builds every name. Default: subjects.Must("").
	Names subjects.Names
	// Logger receives a line per job taken, finished or given up; every
	// line carries job_id. Default: slog.Default().
	Logger *slog.Logger
	// Clock paces the runner's waits (polls, retries) and stamps leases.
	// Default: clock.Real{}.
	Clock clock.Clock
	// Holder names this process in the records of the jobs it holds.
	// Default: a random id.
	Holder string
	// LeaseTTL is how long a holder's claim on a job lasts unless renewed
	// (each checkpoint renews it): after a holder dies, its job waits this
	// long before another takes it. Keep it well under the input stream's
	// duplicate window (2 minutes), which is what makes the operations a
	// new holder publishes again harmless. Default: 20s.
	LeaseTTL time.Duration
	// Poll is how often the runner looks for jobs whose lease lapsed
	// while any job is unsettled (once a minute or so otherwise); new and
	// cancelled jobs wake it at once through a watch. Default: 5s.
	Poll time.Duration
	// Batch is how many runs are handled between two checkpoints.
	// Default: 200.
	Batch int
	// Parallel is how many publishes are in flight at once. Default: 16.
	Parallel int
	// OpTimeout bounds each NATS round trip. Default: 5s.
	OpTimeout time.Duration
	// Sweep carries out the retention sweep (client.OpRetentionSweep) for
	// one settled run: it schedules the run's removal. The dispatcher sets
	// it; a runner without it leaves sweep jobs to runners that have it.
	// Default: nil.
	Sweep func(ctx context.Context, runID string) error
	// Migrate checks one run's history against revision to of its
	// workflow and returns the migration to send it (client.OpMigrate,
	// replay.Migration), or nil to leave the run alone (it has ended, or
	// is on to already). The dispatcher sets it; a runner without it
	// leaves migrations to runners that have it. Default: nil.
	Migrate func(ctx context.Context, runID, to string) (*wire.Migrate, error)
	// SweepRate bounds how many runs per second a sweep handles, so that
	// sweeping a large run bucket does not crowd out the runs' own work.
	// Default: 100.
	SweepRate float64
	// JobRetention is how long a settled job's record (done, failed or
	// cancelled) is kept after it finished; then a runner removes it.
	// Negative keeps records for ever. Default: DefaultJobRetention.
	JobRetention time.Duration
	// Search gives the search attributes of a workflow revision's runs,
	// for the jobs whose filter has a Where (runindex.RegistrySearch; the
	// dispatcher sets it from its registry). Default nil: such a job
	// fails, naming why.
	Search client.SearchFunc
	// CheckpointHook is a test seam, called before each checkpoint is
	// saved, after the batch it records was published, with the job's
	// record as it will be saved (crash tests kill the process there).
	// Never set it in production. Default: nil.
	CheckpointHook func(*wire.Job)
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 20 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 5 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 200
	}
	if c.Parallel <= 0 {
		c.Parallel = 16
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.SweepRate <= 0 {
		c.SweepRate = 100
	}
	if c.JobRetention == 0 {
		c.JobRetention = DefaultJobRetention
	}
	return c
}
