// Package worker is the Go SDK for serving jetflow tasks. A Worker binds
// the durable consumer of each registered task version, runs the handler
// for every invocation with bounded concurrency, heartbeats the message
// while the handler runs, publishes the result to the invocation's reply
// subject and only then acknowledges the invocation.
//
// Handlers control retries with the errors they return: NonRetryable skips
// the remaining attempts, WithCode attaches a code the workflow's retry
// policy can name. A panic is reported as a task error; it never crashes
// the worker. Package workertest runs a handler without a server, and
// package exec serves a task with any program.
//
// docs/WORKERS.md specifies the protocol for workers in other languages.
package worker
