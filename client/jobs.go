package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/wire"
)

// ErrJobNotFound is wrapped when a job id names no job.
var ErrJobNotFound = errors.New("job not found")

// ErrJobSettled is wrapped by CancelJob for a job that has already ended.
var ErrJobSettled = errors.New("job already ended")

// JobSpec is what a bulk job is asked to do: apply Operation (a key of
// Operations) with Reason to every run Filter matches.
type JobSpec struct {
	Operation string
	Reason    string
	Filter    wire.RunFilter
	// By names the submitter, for the record.
	By string
	// Revision is the revision a migration (OpMigrate) moves runs to;
	// required for it, refused for any other operation.
	Revision string
}

// jobs is the job bucket, bound on first use: a deployment provisioned
// before bulk jobs existed has none until it is provisioned again.
type jobs struct {
	mu sync.Mutex
	b  *kvstore.Bucket
}

// JobBucket binds the job bucket; the error wraps kvstore.ErrNotProvisioned
// when it does not exist.
func (c *Client) JobBucket(ctx context.Context) (*kvstore.Bucket, error) {
	c.jobs.mu.Lock()
	defer c.jobs.mu.Unlock()
	if c.jobs.b != nil {
		return c.jobs.b, nil
	}
	b, err := kvstore.BindBucket(ctx, c.js, c.names, c.names.JobBucket())
	if err != nil {
		return nil, fmt.Errorf("client: jobs: %w", err)
	}
	c.jobs.b = b
	return b, nil
}

// SubmitJob checks spec (the operation is known, the filter compiles,
// a --match query included) and stores it as a pending job, which a
// dispatcher then carries out. Nothing is stored when a check fails.
func (c *Client) SubmitJob(ctx context.Context, spec JobSpec) (*wire.Job, error) {
	if _, ok := Operations[spec.Operation]; !ok {
		return nil, fmt.Errorf("client: submit job: unknown operation %q (one of %s)", spec.Operation, strings.Join(OperationNames(), ", "))
	}
	if (spec.Operation == OpMigrate) != (spec.Revision != "") {
		return nil, fmt.Errorf("client: submit job: a revision goes with operation %s and only with it (got operation %q, revision %q)", OpMigrate, spec.Operation, spec.Revision)
	}
	if _, err := CompileFilter(spec.Filter); err != nil {
		return nil, fmt.Errorf("client: submit job: %w", err)
	}
	b, err := c.JobBucket(ctx)
	if err != nil {
		return nil, err
	}
	now := Timestamp(time.Now())
	j := &wire.Job{
		ID: NewJobID(), Operation: spec.Operation, Reason: spec.Reason, Filter: spec.Filter, By: spec.By, Revision: spec.Revision,
		Created: now, Updated: now, State: wire.JobPending,
	}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("client: submit job: %w", err)
	}
	if _, err := b.KV().Create(ctx, j.ID, data); err != nil {
		return nil, fmt.Errorf("client: submit job %s: %w", j.ID, err)
	}
	return j, nil
}

// NewJobID returns a fresh random job id (60 bits, lower-case base32).
func NewJobID() string { return strings.ToLower(rand.Text()[:12]) }

// Timestamp is how job records write times: RFC 3339 in UTC, milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Job reads one job and its revision in the job bucket; fromLeader reads
// through the stream leader (after a lost compare-and-swap).
func (c *Client) Job(ctx context.Context, id string, fromLeader bool) (*wire.Job, uint64, error) {
	b, err := c.JobBucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	v, err := b.Get(ctx, id, fromLeader)
	if errors.Is(err, kvstore.ErrNoKey) {
		return nil, 0, fmt.Errorf("client: job %q: %w", id, ErrJobNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("client: job %s: %w", id, err)
	}
	var j wire.Job
	if err := json.Unmarshal(v.Data, &j); err != nil {
		return nil, 0, fmt.Errorf("client: job %s: decode: %w", id, err)
	}
	return &j, v.Revision, nil
}

// Jobs returns every job, oldest first.
func (c *Client) Jobs(ctx context.Context) ([]*wire.Job, error) {
	b, err := c.JobBucket(ctx)
	if err != nil {
		return nil, err
	}
	var out []*wire.Job
	err = b.Scan(ctx, jetstream.AllKeys, func(e jetstream.KeyValueEntry) {
		var j wire.Job
		if json.Unmarshal(e.Value(), &j) == nil {
			out = append(out, &j)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("client: jobs: %w", err)
	}
	slices.SortFunc(out, func(a, b *wire.Job) int { return cmp.Or(cmp.Compare(a.Created, b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// CancelJob marks a job cancelled; its holder stops at its next
// checkpoint (the runs it already handled stay handled). A job that has
// ended is refused with ErrJobSettled.
func (c *Client) CancelJob(ctx context.Context, id string) (*wire.Job, error) {
	j, _, err := c.UpdateJob(ctx, id, func(j *wire.Job) error {
		if j.Settled() {
			return fmt.Errorf("client: cancel job %s: %w (%s)", id, ErrJobSettled, j.State)
		}
		j.State, j.Finished, j.Holder, j.LeaseUntil = wire.JobCancelled, Timestamp(time.Now()), "", ""
		j.Updated = j.Finished
		return nil
	})
	return j, err
}

// UpdateJob applies change to the job's record by compare-and-swap,
// reading again and retrying (with backoff) when another writer came
// first. An error from change ends it with nothing written. It returns
// the record saved and its revision.
func (c *Client) UpdateJob(ctx context.Context, id string, change func(*wire.Job) error) (*wire.Job, uint64, error) {
	b, err := c.JobBucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	type saved struct {
		j   *wire.Job
		rev uint64
	}
	leader := false
	bo := backoff.WithContext(backoff.NewExponentialBackOff(backoff.WithInitialInterval(10*time.Millisecond), backoff.WithMaxElapsedTime(30*time.Second)), ctx)
	s, err := backoff.RetryWithData(func() (saved, error) {
		j, rev, err := c.Job(ctx, id, leader)
		if err != nil {
			return saved{}, backoff.Permanent(err)
		}
		if err := change(j); err != nil {
			return saved{}, backoff.Permanent(err)
		}
		data, err := json.Marshal(j)
		if err != nil {
			return saved{}, backoff.Permanent(err)
		}
		next, err := b.KV().Update(ctx, id, data, rev)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				leader = true
				return saved{}, err
			}
			return saved{}, backoff.Permanent(fmt.Errorf("client: update job %s: %w", id, err))
		}
		return saved{j, next}, nil
	}, bo)
	return s.j, s.rev, err
}

// WatchJob calls fn with the job's record now and after every change,
// until fn returns false, the job ends (fn sees its last record) or ctx
// ends. It returns the last record seen.
func (c *Client) WatchJob(ctx context.Context, id string, fn func(*wire.Job) bool) (*wire.Job, error) {
	b, err := c.JobBucket(ctx)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.KV().Watch(wctx, id, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("client: watch job %s: %w", id, err)
	}
	defer func() { _ = w.Stop() }()
	var last *wire.Job
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return last, fmt.Errorf("client: watch job %s: watcher closed", id)
			}
			if e == nil {
				if last == nil {
					return nil, fmt.Errorf("client: job %q: %w", id, ErrJobNotFound)
				}
				continue
			}
			var j wire.Job
			if err := json.Unmarshal(e.Value(), &j); err != nil {
				return last, fmt.Errorf("client: job %s: decode: %w", id, err)
			}
			last = &j
			if !fn(last) || j.Settled() {
				return last, nil
			}
		case <-ctx.Done():
			return last, fmt.Errorf("client: watch job %s: %w", id, context.Cause(ctx))
		}
	}
}
