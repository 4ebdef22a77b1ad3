// Package chaos is jetflow's chaos harness: a 3-node NATS JetStream
// cluster, three dispatchers and three workers, each its own OS process,
// under a steady mix of workflows while random processes are SIGKILLed
// and restarted (and, where network namespaces are available, a NATS node
// is cut off from the others for a while). When the faults stop and every
// process runs again, every run must have settled with the result a
// fault-free run gives, every input must have been applied once and
// replay must rebuild every saved state. The package has no API; run
// `go test ./integration/chaos` (short mode) or add `-duration 30m` and
// a longer -timeout (docs/RELIABILITY.md).
package chaos
