package wire

// Operation is the body of an operator's pause, resume or terminate
// request for a run. A terminate needs a reason; for the others it is
// optional. Operator names who asked, for the record.
type Operation struct {
	Reason   string `json:"reason,omitempty"`
	Operator string `json:"operator,omitempty"`
}

// Statuses an operator sets: paused until resumed (not settled), and
// terminated (settled).
const (
	StatusPaused     = "paused"
	StatusTerminated = "terminated"
)
