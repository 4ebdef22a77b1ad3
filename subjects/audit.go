package subjects

// Audit sources: who wrote an audit entry.
const (
	AuditConsole = "console"
	AuditCLI     = "cli"
)

// AuditStream holds the audit log: one entry per action an operator took
// through the console or a state-changing command.
func (n Names) AuditStream() string { return n.prefix + "_audit" }

// AuditAll matches every audit entry.
func (n Names) AuditAll() string { return n.prefix + ".audit.>" }

// Audit is where an entry of the given source (AuditConsole, AuditCLI)
// about one action ("pause", "jobs-create") goes. Both are checked tokens.
func (n Names) Audit(source, action string) string {
	return n.prefix + ".audit." + source + "." + action
}
