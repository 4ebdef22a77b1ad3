package workflow

import (
	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/statechart"
)

// compileChart compiles the lowered statechart; lowering refuses what the
// statechart compiler refuses (a guard that is no query, JF0007, at the
// lowered transition's path).
func compileChart(fsm map[string]any) (*statechart.Chart, error) {
	return statechart.Compile(fsm)
}

// compileRegion compiles one work state's DAG against the optional
// registry and returns it with its declared task versions keyed by node
// path.
func compileRegion(doc map[string]any, tasks map[string]string, revision string) (*dag.DAG, map[string]string, error) {
	d, err := dag.Compile(doc, dag.Options{Tasks: tasks, Revision: revision})
	if err != nil {
		return nil, nil, err
	}
	return d, d.TaskVersions(), nil
}
