package replay

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinels callers branch on.
var (
	// ErrHistoryTrimmed: messages the run's state depends on are no
	// longer in the input stream (its MaxAge or another limit removed
	// them, or they were purged). The error is a *TrimmedError saying
	// what is missing.
	ErrHistoryTrimmed = errors.New("run history trimmed")
	// ErrNoHistory: the input stream holds no message of the run and no
	// record of it exists: there is no such run.
	ErrNoHistory = errors.New("no history")
	// ErrNotStarted: the run has inputs but no start was ever applied.
	ErrNotStarted = errors.New("run never started")
	// ErrNoRecord: Check found no saved record to compare with.
	ErrNoRecord = errors.New("no saved record")
)

// TrimmedError says which part of a run's history is gone.
type TrimmedError struct {
	RunID string
	// Missing says what is gone, as a sentence.
	Missing string
	// The input stream's first stored sequence and its time, and its
	// MaxAge (0: kept forever), when known.
	StreamFirst     uint64
	StreamFirstTime time.Time
	MaxAge          time.Duration
}

func (e *TrimmedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: history trimmed: %s", e.RunID, e.Missing)
	if e.StreamFirst > 0 {
		fmt.Fprintf(&b, "; the input stream now begins at seq %d (%s)", e.StreamFirst, e.StreamFirstTime.UTC().Format(time.RFC3339))
	}
	if e.MaxAge > 0 {
		fmt.Fprintf(&b, " and keeps messages for %s", e.MaxAge)
	}
	b.WriteString("; a replay would rebuild a wrong state, so none was made (keep history longer: the input stream's MaxAge, `jetflow serve --history-max-age`)")
	return b.String()
}

// Is makes errors.Is(err, ErrHistoryTrimmed) hold.
func (e *TrimmedError) Is(target error) bool { return target == ErrHistoryTrimmed }
