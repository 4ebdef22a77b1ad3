// Package startctl decides a start's idempotency key, singleton key and
// debounce in one place, for every way a start arrives (a raw start
// message, `jetflow start`, the client, a trigger, the gateway, a
// schedule fire): the dispatchers call it on each start that carries one
// of them, before the start may create its run. Keys and holders live in
// KV buckets moved with compare-and-swap; a held start (a debounced one,
// or one queued behind a singleton) is a message schedule in the timer
// stream that the server fires back into the input stream, so no process
// holds it (docs/STARTS.md).
package startctl
