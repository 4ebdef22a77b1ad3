// Package kvstore is jetflow's storage on JetStream: Provision creates the
// streams and buckets a deployment uses, RunStore keeps each run's state
// under compare-and-swap, and Bucket binds a KV bucket for a store, with
// reads through the stream leader (the workflow registry, package
// registry, keeps its documents through one).
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
	// ErrNotProvisioned: a stream or bucket is missing; run Provision.
	ErrNotProvisioned = errors.New("not provisioned")
)
