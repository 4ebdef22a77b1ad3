// Package chaos is jetflow's chaos harness: a 3-node NATS JetStream
// cluster, three dispatchers and three workers, each its own OS process,
// under a steady mix of workflows while random processes are SIGKILLed
// and restarted (and, where network namespaces are available, a NATS node
// is cut off from the others for a while), and the workers misbehave on a
// share of the attempts (a NAK until max_deliver runs out, an invocation
// dropped, a malformed result), which must then end at their deadline.
// Most runs are removed by retention (and archived) seconds after they
// settle, some are reset once done; no run may be removed unless settled.
// Three schedules fire every two seconds throughout, and no fire time
// may start two runs, nor (under catch-up all) none.
// When the faults stop and every process runs again, every run must have
// settled with the result a fault-free run gives, every input must have
// been applied once, replay must rebuild every saved state, and no run
// may ever have been left without a way forward. The package has no API; run
// `go test ./integration/chaos` (short mode) or add `-duration 30m` and
// a longer -timeout (docs/RELIABILITY.md).
package chaos
