// Package compat holds jetflow's upgrade tests: a build must continue
// the runs an older release left in its store (stored-state fixture
// sets under testdata/, one per release, written by that release's own
// code with gen/), and must share a deployment with the previous
// release's dispatchers while they are replaced (rolling upgrade). The
// package has no API; README.md states the compatibility promise the
// tests hold the build to.
package compat
