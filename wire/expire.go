package wire

import (
	"encoding/json"
	"time"
)

// HeaderExpire marks a settled run's removal schedule, and so the fire it
// produces on the run's timer subject, as a removal rather than a timer.
// Its value is "1".
const HeaderExpire = "Jetflow-Expire"

// Expire is the body of a settled run's removal schedule, and so of the
// removal input it fires (docs/ARCHITECTURE.md, "Retention"). It names
// the settlement it was scheduled for: a run settled again since (a
// redrive) is not removed by an older schedule.
type Expire struct {
	// Settled is the logical time of the settlement (the status's time),
	// Unix milliseconds.
	Settled float64 `json:"settled"`
	// Status is the status the run settled with.
	Status string `json:"status"`
	// Retention is how long the run is kept after Settled, in
	// milliseconds; its tombstone lives as long again.
	Retention float64 `json:"retention"`
}

// Removed is what the run bucket holds for a run removed by retention (a
// tombstone) until it expires, in place of the run's record.
type Removed struct {
	// Run is the run's id.
	Run string `json:"run"`
	// At is when the run was removed (the removal input's stream time),
	// Unix milliseconds.
	At float64 `json:"at"`
	// Workflow, Revision, Status and Settled describe the run as it
	// settled.
	Workflow string  `json:"workflow"`
	Revision string  `json:"revision"`
	Status   string  `json:"status"`
	Settled  float64 `json:"settled"`
	// HistoryKept says the run's history was not erased: the input
	// stream denies purges (made before retention existed), so it stays
	// until the stream's MaxAge.
	HistoryKept bool `json:"historyKept,omitempty"`
	// Archived says the run's record and history were written to the
	// archive (subjects.Names.ArchiveBucket) before the tombstone.
	Archived bool `json:"archived,omitempty"`
	// Until is when the tombstone expires and the run id is free again,
	// Unix milliseconds.
	Until float64 `json:"until"`
}

// Due is a settled run's due entry for batched removal
// (docs/ARCHITECTURE.md, "Retention"): published with the settling
// step's effects on subjects.Names.ReapDue, read when its bucket is
// reaped. It carries what the tombstone needs, so that a run unchanged
// since (its record still at Rev) is removed without reading it.
type Due struct {
	// Run is the run's id.
	Run string `json:"run"`
	// Workflow and Revision name the run's pinned workflow revision.
	Workflow string `json:"workflow"`
	Revision string `json:"revision"`
	// Status and Settled are the settlement the entry removes (Settled
	// is the status's time, Unix milliseconds).
	Status  string  `json:"status"`
	Settled float64 `json:"settled"`
	// Retention is how long the run is kept after Settled, in
	// milliseconds; its tombstone lives as long again.
	Retention float64 `json:"retention"`
	// Rev is the record's revision when the entry was published: the
	// tombstone's compare-and-swap. A record changed since is read and
	// judged again.
	Rev uint64 `json:"rev"`
	// Timers says the run armed a timer other than its attempts'
	// deadlines: its schedules and fired timers are purged with it.
	Timers bool `json:"timers,omitempty"`
	// Archive says the run's record and history are written to the
	// archive before the tombstone.
	Archive bool `json:"archive,omitempty"`
	// Seq is the stream sequence of the input that settled the run (the
	// last it applied): a later input of the run defers its removal.
	// 0 in entries of earlier releases.
	Seq uint64 `json:"seq,omitempty"`
	// Parent is the run's parent when it is a child run
	// (docs/CHILDREN.md): its removal waits until the parent has settled.
	// Empty in entries of earlier releases.
	Parent string `json:"parent,omitempty"`
	// Inputs are the stream sequences of every input the run took,
	// ascending, when its record named them all and it wrote no sequence
	// page: the removal purges the run's history one input at a time
	// (a purge that takes several messages costs the server a count of
	// every input consumer's pending messages). Nil in entries of earlier
	// releases, and for longer runs: one purge takes the history.
	Inputs []uint64 `json:"inputs,omitempty"`
}

// Archived is a run removed by retention as the archive keeps it (one
// object per run id in subjects.Names.ArchiveBucket): the tombstone that
// replaced it, its last record and its whole history, so that status,
// history and replay read it as they read a live run.
type Archived struct {
	// Removed is the tombstone written after the archive (Archived set).
	Removed Removed `json:"removed"`
	// Record is the run's record as it was removed (runrecord's format).
	Record json.RawMessage `json:"record"`
	// History is every message of the run's input stream history, in
	// stream order.
	History []ArchivedInput `json:"history"`
}

// ArchivedInput is one message of an archived run's history.
type ArchivedInput struct {
	Seq     uint64              `json:"seq"`
	Time    time.Time           `json:"time"`
	Subject string              `json:"subject"`
	Header  map[string][]string `json:"header,omitempty"`
	Data    []byte              `json:"data,omitempty"`
}
