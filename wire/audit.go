package wire

// AuditEntry is one message of the audit stream: an action an operator
// took through the console or a state-changing command, and what came of
// it. Times are RFC 3339 in UTC.
type AuditEntry struct {
	// Time is when the action was answered.
	Time string `json:"time"`
	// Who is the authenticated identity: the console's user (token,
	// basic or forward-auth), "anonymous" on a console without
	// authentication, or the operator a command names (--operator,
	// JETFLOW_OPERATOR, else the OS user).
	Who string `json:"who"`
	// Source is "console" or "cli".
	Source string `json:"source"`
	// Action is what was asked: "pause", "resume", "terminate",
	// "cancel", "event", "redrive", "reset", "jobs-create",
	// "jobs-cancel", "task-pause", "task-resume", "deploy",
	// "schedule-create", "schedule-pause", "schedule-resume",
	// "schedule-trigger", "schedule-delete".
	Action string `json:"action"`
	// The target: a run, a bulk job, a filter, a task version, a
	// workflow or a schedule, whichever the action names.
	Run      string     `json:"run,omitempty"`
	Job      string     `json:"job,omitempty"`
	Filter   *RunFilter `json:"filter,omitempty"`
	Task     string     `json:"task,omitempty"`
	Workflow string     `json:"workflow,omitempty"`
	Schedule string     `json:"schedule,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	// Result is AuditAccepted or AuditRefused; Detail says why a refusal
	// was refused, or what an accepted action did ("seq 42").
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
	// Remote is the console request's peer address ("" for a command).
	Remote string `json:"remote,omitempty"`
	// Command is the jetflow command line that does the same.
	Command string `json:"command,omitempty"`
}

// Audit results.
const (
	AuditAccepted = "accepted"
	AuditRefused  = "refused"
)
