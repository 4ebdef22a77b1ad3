package subjects

// StartKeyBucket is the KV bucket of start idempotency keys and start
// decisions (package startctl): key, an idempotency key's digest, value
// the run id it started; key StartDecisionKey(run), the decision on a
// start that did not start its run. Its TTL is the idempotency window.
func (n Names) StartKeyBucket() string { return n.prefix + "_startkeys" }

// SingletonBucket is the KV bucket of singleton keys: key, the singleton
// key's digest; value, the run that holds it.
func (n Names) SingletonBucket() string { return n.prefix + "_singletons" }

// StartDecisionKey is the key of the decision on run's start in the
// start key bucket (a digest has no '.', so the two never meet).
func StartDecisionKey(runID string) string { return "run." + runID }

// DebounceMarkKey is the key, in the start key bucket, of the latest
// start (its input sequence and run) of a debounce key (digest, hex).
func DebounceMarkKey(digest string) string { return "debounce." + digest }

// StartDecisions matches every start decision in the start key bucket.
func StartDecisions() string { return "run.*" }

// heldToken is the token after "sched." of held starts: '~' is in no run
// id, so a run's own timer subjects (Schedule(run, ">"), Expiry(run))
// never match a held start, nor a purge of them.
const heldToken = "~held"

// DebounceHold is the schedule, in the timer stream, of the start a
// debounce key holds: one per key, so a later start of the burst
// replaces it. digest is the key's hex digest.
func (n Names) DebounceHold(digest string) string {
	return n.prefix + ".sched." + heldToken + ".debounce." + digest
}

// SingletonHold is the schedule, in the timer stream, of run's start
// queued behind the active run of a singleton key (digest, hex).
func (n Names) SingletonHold(digest, runID string) string {
	return n.prefix + ".sched." + heldToken + ".singleton." + digest + "." + runID
}

// SingletonHolds matches the queued starts of a singleton key.
func (n Names) SingletonHolds(digest string) string {
	return n.prefix + ".sched." + heldToken + ".singleton." + digest + ".*"
}
