package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// parentText is a child run's "parent" row: the run and the task attempt
// that started it.
func parentText(p *wire.Parent) string {
	return fmt.Sprintf("%s (node %s, %s@%s attempt %d, activation %s)", p.Run, p.Node, p.Task, p.Version, p.Attempt, p.Activation)
}

// childrenSummary is the "children" row: how many, by status.
func childrenSummary(nodes []client.ChildNode) string {
	counts := client.TreeCounts(nodes)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return fmt.Sprintf("%d (%s)", len(nodes), strings.Join(parts, ", "))
}

// childRows are the rows of --tree: one per child, indented by depth.
func childRows(row func(k, v string), nodes []client.ChildNode, depth int) {
	for _, n := range nodes {
		detached := ""
		if n.Detached {
			detached = ", detached"
		}
		status := n.Status
		if n.Status == client.ChildRemoved {
			status = "removed by retention"
			if n.RemovedAt > 0 {
				status += " at " + humanTime(time.UnixMilli(int64(n.RemovedAt)))
			}
		}
		row("", fmt.Sprintf("%s%s  %s  node %s attempt %d  %s%s", strings.Repeat("  ", depth), n.Run, n.Workflow, n.Node, n.Attempt, status, detached))
		childRows(row, n.Children, depth+1)
	}
}

// printFamily prints a run's parent row and its children: a count, or
// with tree one row each.
func printFamily(s streams, parent *wire.Parent, kids []client.ChildNode, tree bool) {
	if parent == nil && len(kids) == 0 {
		return
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	if parent != nil {
		row("parent", parentText(parent))
	}
	if len(kids) == 0 {
		return
	}
	row("children", childrenSummary(kids))
	if tree {
		childRows(row, kids, 0)
	}
}

// parentLink is a child's parent link as status shows it: without the
// attempt's token, which would let its reader answer for the child.
func parentLink(p *wire.Parent) *wire.Parent {
	if p == nil {
		return nil
	}
	c := *p
	c.Token = ""
	return &c
}

// startsChildren reports whether the run's task version task@version
// started child runs: bound to a workflow, no worker serves it.
func startsChildren(rec *runrecord.Record, taskVersion string) bool {
	if rec == nil {
		return false
	}
	for _, c := range rec.Children {
		if c.Task+"@"+c.Version == taskVersion {
			return true
		}
	}
	return false
}
