package subjects

// CheckTriggerName refuses a trigger name that cannot be a stream, consumer
// and run id token.
func CheckTriggerName(name string) error { return checkToken("trigger name", name) }

// TriggerStream is the stream that keeps the messages of a subject trigger
// name listens to (a stream over a subject outside jetflow's own), so that
// they wait for a dispatcher however long none runs.
func (n Names) TriggerStream(name string) string { return n.prefix + "_trigger_" + name }

// TriggerConsumer is the durable consumer dispatchers share on each
// trigger stream.
func (n Names) TriggerConsumer() string { return "trigger" }

// TriggerBucket is the KV bucket of deployed triggers, one key per
// workflow holding that workflow's trigger file.
func (n Names) TriggerBucket() string { return n.prefix + "_triggers" }

// Owns reports whether subject lies in the deployment's own namespace
// (the prefix's first token), where no trigger may listen.
func (n Names) Owns(subject string) bool {
	return subject == n.prefix || len(subject) > len(n.prefix) && subject[:len(n.prefix)+1] == n.prefix+"."
}
