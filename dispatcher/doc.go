// Package dispatcher is the message-driven runtime around the pure run
// reducer. Any number of dispatcher processes share one durable consumer of
// the run-input stream; for each input they load the run, apply the
// reducer with the message's stream time, save the new state together with
// the effects it produced (an outbox) by compare-and-swap, publish those
// effects idempotently and only then acknowledge the input. A crash at any
// point between save, publish and acknowledge loses nothing: the
// redelivered input is recognised as applied and only its effects are
// published again.
package dispatcher
