// Package engine is the pure heart of jetflow: jaren-workflow 0.2 in Go,
// in agreement with the reference library. Its subpackages take time, ids
// and inputs as arguments, start no goroutine, do no I/O and never log;
// they return effects and records as data. purity_test.go enforces it.
package engine
