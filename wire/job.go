package wire

import "encoding/json"

// RunFilter selects runs: every set field must hold. It is the filter of
// `jetflow list` and of a bulk job.
type RunFilter struct {
	// Workflow is the run's workflow name.
	Workflow string `json:"workflow,omitempty"`
	// Revision is the deployed revision the run is pinned to.
	Revision string `json:"revision,omitempty"`
	// Status is one of the run statuses (StatusRunning ...).
	Status string `json:"status,omitempty"`
	// StartedBefore and StartedAfter bound when the run's start message
	// was stored in the input stream (RFC 3339): before is exclusive,
	// after inclusive.
	StartedBefore string `json:"startedBefore,omitempty"`
	StartedAfter  string `json:"startedAfter,omitempty"`
	// State is the id of the run's active state (a JSON Pointer such as
	// "/states/wait") or its bare name ("wait").
	State string `json:"state,omitempty"`
	// Match is a Jaren JSON Query evaluated over {"input": …, "data": …}
	// of the run; the run matches when its effective boolean value is true.
	Match json.RawMessage `json:"match,omitempty"`
	// Where holds search attribute conditions: the run's attribute
	// (declared in its deployment's policy, "$run"."search") named by
	// each key equals the value.
	Where map[string]string `json:"where,omitempty"`
	// Runs, when not empty, admits only the runs with these ids (at most
	// MaxFilterRuns): a job over runs named one by one, such as those a
	// revision check found the same. The other fields still apply.
	Runs []string `json:"runs,omitempty"`
}

// MaxFilterRuns bounds RunFilter.Runs, so that a job's record (which
// holds its filter) stays well under a message's 1 MiB at the longest
// run ids (128 bytes).
const MaxFilterRuns = 5000

// Job states.
const (
	JobPending   = "pending"
	JobRunning   = "running"
	JobDone      = "done"
	JobCancelled = "cancelled"
	JobFailed    = "failed"
)

// Job is a bulk job's record in the job bucket: what was asked (the spec)
// and how far it got (the progress). Times are RFC 3339 in UTC.
type Job struct {
	// ID is the job's id, its key in the bucket.
	ID string `json:"id"`
	// Operation is the per-run operation applied to every matching run
	// ("cancel").
	Operation string `json:"operation"`
	// Reason goes with every operation the job publishes.
	Reason string    `json:"reason,omitempty"`
	Filter RunFilter `json:"filter"`
	// By names who submitted the job (free text, for the record).
	By      string `json:"by,omitempty"`
	Created string `json:"created"`

	// Revision is the revision a migration moves runs to (operation
	// "migrate" only).
	Revision string `json:"revision,omitempty"`

	// State is JobPending until a dispatcher takes the job, then
	// JobRunning, then JobDone, JobCancelled or JobFailed.
	State string `json:"state"`
	// Matched is how many runs matched the filter at the holder's last
	// scan; Sent, Skipped (matched but not eligible, such as a settled
	// run for a cancel) and Errors (publishes that failed after retries)
	// count the runs handled so far.
	Matched int `json:"matched"`
	Sent    int `json:"sent"`
	Skipped int `json:"skipped"`
	Errors  int `json:"errors"`
	// Error is why the job failed, or the last publish error.
	Error string `json:"error,omitempty"`
	// Cursor is the last run id done, in run id order: a new holder
	// resumes after it.
	Cursor string `json:"cursor,omitempty"`
	// Holder is the dispatcher working on the job and LeaseUntil when
	// its claim lapses unless renewed.
	Holder     string `json:"holder,omitempty"`
	LeaseUntil string `json:"leaseUntil,omitempty"`
	// Takeovers counts how often the job was taken after a holder's lease
	// lapsed.
	Takeovers int    `json:"takeovers,omitempty"`
	Updated   string `json:"updated,omitempty"`
	Finished  string `json:"finished,omitempty"`
}

// Settled reports whether the job has ended (done, cancelled or failed).
func (j *Job) Settled() bool {
	return j.State == JobDone || j.State == JobCancelled || j.State == JobFailed
}
