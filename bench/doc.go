// Package bench measures jetflow against the machine it runs on: runs per
// second at saturation, start-to-done latency, CPU, memory, and the
// durable operations and bytes each run costs, for a set of scenarios
// (one task, a fan-out DAG, an event wait, a loop, parked runs), how late
// timers due at one instant end their runs' waits, and how fast a fresh
// console indexes and pages many runs. In the same run it measures raw
// JetStream operations on the same server and prints each scenario's rate
// as a fraction of the best rate those operations allow. Deployments are
// one process, separate processes (server, dispatchers, workers) or a
// 3-node cluster; Run returns a Report that renders as JSON and as a
// markdown table. `jetflow bench` is the command around it.
package bench
