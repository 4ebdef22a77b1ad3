// Package kvstore is jetflow's storage on JetStream: Provision creates the
// streams and buckets a deployment uses, RunStore keeps each run's state
// under compare-and-swap, and Registry keeps deployed workflow documents,
// content-addressed and immutable, with the revisions of each name.
package kvstore

import "errors"

// Sentinels for the outcomes callers branch on. Returned errors wrap them
// with the bucket and key concerned; test with errors.Is.
var (
	// ErrRunNotFound: no run is stored under the id.
	ErrRunNotFound = errors.New("run not found")
	// ErrRunExists: Create found a run already stored under the id.
	ErrRunExists = errors.New("run already exists")
	// ErrStale: Update's last revision is not the run's current one
	// (another writer won; reload and retry).
	ErrStale = errors.New("stale revision")
	// ErrWorkflowNotFound: no workflow (or no such revision of it) is
	// deployed under the name.
	ErrWorkflowNotFound = errors.New("workflow not found")
	// ErrDocumentNotFound: no workflow document is stored under the hash.
	ErrDocumentNotFound = errors.New("workflow document not found")
	// ErrRevisionImmutable: a different document or policy was deployed
	// under a (name, revision) pair that already exists.
	ErrRevisionImmutable = errors.New("workflow revision already deployed with a different document or policy")
	// ErrNotProvisioned: a stream or bucket is missing; run Provision.
	ErrNotProvisioned = errors.New("not provisioned")
)
