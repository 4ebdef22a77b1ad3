// Package runrecord holds the run record: what the run bucket stores
// under a run id (the reducer's state, the outbox it still owes, the
// inputs it applied, refused and ignored, and their order), and its
// codec. It knows nothing of the engine or of NATS: clients, the console
// and the CLI read records through it, and package step writes them.
package runrecord
