// Package integration holds jetflow's end-to-end tests: real embedded
// nats-servers with JetStream, dispatchers in process and as separate
// processes that are killed mid-step, Go SDK workers and the client,
// driving whole workflows under -race. The package has no API; its tests
// are the specification of what a deployment guarantees.
package integration
