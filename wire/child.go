package wire

// Parent is what a child run's start carries about the task attempt that
// started it (docs/CHILDREN.md): the child's dispatcher publishes the
// child's result to Run's result subject as that attempt's result,
// echoing Token, once the child settles.
type Parent struct {
	Run        string `json:"run"`
	Activation string `json:"activation"`
	Node       string `json:"node"`
	Task       string `json:"task"`
	Version    string `json:"version"`
	Attempt    int    `json:"attempt"`
	// Token is the attempt's token, as an invocation would carry it: the
	// parent accepts the child's result only with it.
	Token string `json:"token,omitempty"`
}

// Child is a parent record's link to one child run it started: one per
// task attempt of a node bound to a workflow (docs/CHILDREN.md).
type Child struct {
	Run        string `json:"run"`
	Workflow   string `json:"workflow"`
	Activation string `json:"activation"`
	Node       string `json:"node"`
	Task       string `json:"task"`
	Version    string `json:"version"`
	Attempt    int    `json:"attempt"`
	// Detached is set when the binding opts out of the cascade: the
	// parent's cancel, terminate, pause and resume do not reach the child.
	Detached bool `json:"detached,omitempty"`
}

// HeaderChild names the child run on the result it publishes to its
// parent, so that the parent's history shows where a result came from.
const HeaderChild = "Jetflow-Child"

// Child run failure codes: the task error a parent's attempt gets when
// its child run did not end done.
const (
	CodeChildFailed     = "CHILD_FAILED"
	CodeChildCancelled  = "CHILD_CANCELLED"
	CodeChildTerminated = "CHILD_TERMINATED"
)
