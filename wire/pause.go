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

// Postpone is the body of a dispatcher's postpone input: the due
// attempts of this task version start over, because an operator paused
// it. Deadline is the deadline fire that found them due (Unix ms).
type Postpone struct {
	Task     string  `json:"task"`
	Version  string  `json:"version"`
	Deadline float64 `json:"deadline"`
}
