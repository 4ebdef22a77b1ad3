// Package dispatcher is the I/O loop around the pure step (package step).
// Any number of dispatcher processes share the run-input stream: in a
// partitioned deployment each consumes the partitions it owns, shared out
// among the dispatchers that run (partitions.go), otherwise they share one
// durable consumer; for each input they load the run's record, call
// step.Step with the message's stream time, save the new record together
// with the effects it produced (an outbox) by compare-and-swap, publish
// those effects idempotently and only then acknowledge the input. A crash
// at any point between save, publish and acknowledge loses nothing: the
// redelivered input is recognised as applied and only its effects are
// published again.
//
// Files: dispatcher.go (lifecycle), lanes.go (receiving and per-run
// queues), handle.go (one input from receipt to acknowledgement),
// apply.go (load, step, save, publish), partitions.go (which partitions
// this process consumes), early.go (inputs that come before
// their run's start), publish.go (carrying out an outbox), cache.go,
// config.go, metrics.go, gc.go (a dispatcher process's GC tuning).
package dispatcher
