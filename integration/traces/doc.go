// Package traces tests that a run is one OpenTelemetry trace: the
// dispatchers' and the workers' spans, exported over OTLP to a real
// receiver the tests start, form the tree docs/OBSERVABILITY.md
// describes.
package traces
