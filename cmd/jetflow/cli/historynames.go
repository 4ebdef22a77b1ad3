package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// A run's history names what its messages are about in the author's
// terms: the revision a start pinned, and the state and task of a task
// result, which the message itself names only by the DAG's node ("task"
// in every work state that runs one task).

// historyNames is what history reads of a run to name its messages.
type historyNames struct {
	revision string // the revision the run started on
	wf       *workflow.Workflow
}

// readHistoryNames reads run id's pinned revision and definition; the
// zero value (nothing to add) when the run has no record.
func readHistoryNames(ctx context.Context, f *fleet.Fleet, id string) historyNames {
	_, st, err := readRun(ctx, f, id)
	if err != nil {
		return historyNames{}
	}
	n := historyNames{revision: st.Revision}
	if st.StartRevision != "" {
		n.revision = st.StartRevision
	}
	n.wf, _ = compiledWorkflows(ctx, f)(st.Workflow, n.revision)
	return n
}

// taskOf is the state and task of a result's node; "" for what is not
// known. The state comes from the result's activation, the task from
// the state's DAG.
func (n historyNames) taskOf(r *wire.Result) (state, task string, plain bool) {
	var act []any
	if json.Unmarshal([]byte(r.Activation), &act) != nil || len(act) != 3 {
		return "", "", false
	}
	state, _ = act[1].(string)
	if n.wf == nil || n.wf.DAGs[state] == nil {
		return state, "", false
	}
	d := n.wf.DAGs[state]
	info, ok := d.Node(r.Node)
	if !ok || info.Task == "" {
		return state, "", false
	}
	tasks := 0
	for _, id := range d.Nodes() {
		if i, _ := d.Node(id); i.Kind == dag.KindTask {
			tasks++
		}
	}
	return state, info.Task + "@" + info.Version, tasks == 1 && r.Node == "task"
}

// summary is replay's summary of m with the names added: a start's
// "revision=(latest)" becomes the revision it pinned, a result's
// "node=task" its state and task ("state=go task=boom@1"; a DAG's node
// keeps its id: "state=check node=stock task=check-stock@1").
func (n historyNames) summary(names subjects.Names, m replay.Message, summary string) (state, task string, out string) {
	_, kind, _, err := names.ParseInput(m.Subject)
	if err != nil {
		return "", "", summary
	}
	switch kind {
	case subjects.KindStart:
		if n.revision != "" {
			summary = strings.Replace(summary, "revision=(latest)", "revision="+n.revision+" (the latest at its start)", 1)
		}
		var st wire.Start
		if json.Unmarshal(m.Data, &st) == nil && st.Parent != nil {
			summary += fmt.Sprintf(" parent=%s node=%s attempt=%d", st.Parent.Run, st.Parent.Node, st.Parent.Attempt)
		}
	case subjects.KindResult:
		var r wire.Result
		if json.Unmarshal(m.Data, &r) != nil {
			return "", "", summary
		}
		var plain bool
		state, task, plain = n.taskOf(&r)
		if state == "" {
			return "", "", summary
		}
		named := "state=" + stateName(state)
		if !plain {
			named += " node=" + r.Node
		}
		if task != "" {
			named += " task=" + task
		}
		summary = strings.Replace(summary, "node="+r.Node, named, 1)
		if child := m.Header.Get(wire.HeaderChild); child != "" {
			summary += " child=" + child
		}
	}
	return state, task, summary
}

// line is m's history line with the names added.
func (n historyNames) line(names subjects.Names, m replay.Annotated) string {
	text := m.Line(names)
	_, summary := replay.Summarize(names, m.Message)
	if _, _, named := n.summary(names, m.Message, summary); named != summary {
		text = strings.Replace(text, summary, named, 1)
	}
	return text
}
