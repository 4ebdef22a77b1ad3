package wire

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
	// Until is when the tombstone expires and the run id is free again,
	// Unix milliseconds.
	Until float64 `json:"until"`
}
