package subjects

// StartKeyBucket is the KV bucket of the gateway's start idempotency keys:
// key, the key's digest; value, the run id it started. Its TTL is the
// idempotency window.
func (n Names) StartKeyBucket() string { return n.prefix + "_startkeys" }

// SingletonBucket is the KV bucket of the gateway's singleton keys: key,
// the singleton key's digest; value, the run that holds it.
func (n Names) SingletonBucket() string { return n.prefix + "_singletons" }
