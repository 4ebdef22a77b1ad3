// Package replay rebuilds a run's state from its history: every message
// on the run's input subjects, kept in the input stream. It applies them
// through the dispatcher's own parse and transition code (a
// Stepper) in the order the dispatchers applied them, so the
// rebuilt state equals the saved one byte for byte. Check compares the
// two, Restore writes the rebuilt record back (after the run bucket lost
// it, say), and a history cut short by the stream's retention is refused
// with ErrHistoryTrimmed rather than rebuilt wrong.
package replay
