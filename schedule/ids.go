package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// slotLayout names a fire time in a run id: whole seconds, UTC.
const slotLayout = "20060102T150405Z"

// RunID is the id of the run a schedule's fire at slot starts:
// "<name>-<slot>" with slot as 20060102T150405Z. Every fire for the same
// time, a duplicate after a server's leader change included, names the
// same run, which starts once.
func RunID(name string, slot time.Time) string {
	return name + "-" + slot.UTC().Format(slotLayout)
}

// TriggerRunID is the id of the run a trigger at t starts:
// "<name>-manual-<t>" with t to the millisecond.
func TriggerRunID(name string, t time.Time) string {
	return name + "-manual-" + t.UTC().Format("20060102T150405") + t.UTC().Format(".000")[1:] + "Z"
}

// JitterDelay is how much later than its fire time the run of the fire
// at slot starts: derived from the name and the slot alone (SHA-256), so
// that every dispatcher, and every replay of the schedule's decisions,
// computes the same delay; less than jitter, in milliseconds.
func JitterDelay(name string, slot time.Time, jitter time.Duration) time.Duration {
	ms := jitter.Milliseconds()
	if ms <= 0 {
		return 0
	}
	h := sha256.Sum256([]byte(name + "\x00" + slot.UTC().Format(time.RFC3339Nano)))
	return time.Duration(binary.BigEndian.Uint64(h[:8])%uint64(ms)) * time.Millisecond
}
