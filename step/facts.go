package step

// Facts are what an input says about itself besides its payload: the
// identifiers a trace or a log line may carry. Each member is set only
// for the kinds that have it.
type Facts struct {
	// Event is an event's type.
	Event string
	// Timer and Deadline name a fired timer and its logical deadline.
	Timer    string
	Deadline float64
	// Activation, Node and Attempt name the task attempt a result
	// answers; ErrorCode is the code of a failed attempt, Failed whether
	// it failed.
	Activation string
	Node       string
	Attempt    int
	Failed     bool
	ErrorCode  string
	// Reason and Operator are what an operator gave (cancel, pause,
	// resume, terminate, redrive, reset).
	Reason   string
	Operator string
}

// Facts returns what the input says about itself.
func (in *Input) Facts() Facts {
	m := in.msg
	f := Facts{Reason: m.Reason, Operator: m.Operator}
	if m.Event != nil {
		f.Event = m.Event.Type
	}
	if m.Timer != nil {
		f.Timer, f.Deadline = m.Timer.ID, m.Timer.Deadline
	}
	if r := m.Result; r != nil {
		f.Activation, f.Node, f.Attempt = r.Activation, r.Node, r.Attempt
		if r.Error != nil {
			f.Failed, f.ErrorCode = true, r.Error.Code
		}
	}
	return f
}
