// Package otherlang checks that jetflow can be served by workers written
// from docs/PROTOCOL.md alone: it runs the order workflow with its tasks
// served by the Node.js worker of examples/workers/node and by exec
// workers running the shell and Python scripts of examples/workers/shell,
// each as a real process against a real embedded nats-server. Its capture
// test also produces the worked examples of docs/PROTOCOL.md from a live
// run.
package otherlang
