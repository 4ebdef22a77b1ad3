package subjects

import (
	"strconv"
	"strings"
)

// QueueStream is the stream of queued invocations: those of task
// versions whose policy gives them a priority or a fairness key wait
// here until a dispatcher admits them onto the task subject
// (docs/POLICY.md#priority-and-fairness).
func (n Names) QueueStream() string { return n.prefix + "_queue" }

// QueueAll matches every queued invocation.
func (n Names) QueueAll() string { return n.prefix + ".queue.>" }

// NoKey is the key token of a queued invocation whose task version names
// no fairness key.
const NoKey = "-"

// Queue is where an invocation of a task version waits with a priority
// and the token of its fairness key (NoKey for none): a short hash of the
// key's value, so that any value fits in one subject token.
func (n Names) Queue(task, version string, priority int, keyToken string) string {
	return n.prefix + ".queue." + task + "." + VersionToken(version) + "." + strconv.Itoa(priority) + "." + keyToken
}

// TaskQueue matches the queued invocations of one task version.
func (n Names) TaskQueue(task, version string) string {
	return n.prefix + ".queue." + task + "." + VersionToken(version) + ".>"
}

// ParseQueue splits a Queue subject into its task name, version token,
// priority and key token.
func (n Names) ParseQueue(subject string) (task, versionToken string, priority int, keyToken string, ok bool) {
	rest, found := strings.CutPrefix(subject, n.prefix+".queue.")
	if !found {
		return "", "", 0, "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[3] == "" {
		return "", "", 0, "", false
	}
	p, err := strconv.Atoi(parts[2])
	if err != nil || p < 0 {
		return "", "", 0, "", false
	}
	return parts[0], parts[1], p, parts[3], true
}
