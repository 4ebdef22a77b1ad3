package workflow

import (
	"errors"
	"sort"
	"strings"

	"github.com/jetflow/jetflow/engine/dag"
	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/statechart"
	"github.com/jetflow/jetflow/engine/value"
)

// Options tune Compile. The zero value compiles without a task registry.
type Options struct {
	// Tasks is an optional registry of task name to handler version; ""
	// stands for a handler registered without a version (the reference's
	// bare function). When set, a task the registry lacks is JF0018 and a
	// version it does not match is JF0019, as in the reference. When nil,
	// task names and versions are taken as declared: jetflow's handlers
	// live in remote workers, which check versions when they register.
	// Default nil.
	Tasks map[string]string
}

// Workflow is a compiled workflow: its lowering, the compiled control
// statechart, one compiled DAG and input query per work state, and the
// identities a run snapshot and its DAG provenance are checked against.
// It is immutable and safe for concurrent use.
type Workflow struct {
	Lowered *Lowered
	Chart   *statechart.Chart
	// DAGs and Inputs are keyed by work state id.
	DAGs   map[string]*dag.DAG
	Inputs map[string]*query.Query
	// Revisions are the content fingerprints of the control statechart and
	// of each DAG document.
	Revisions Revisions
	// TaskVersions maps <state id>/<node path> to the declared version of
	// every task; TaskVersionKeys lists its keys in the reference's sorted
	// order.
	TaskVersions    map[string]string
	TaskVersionKeys []string
	// Identity is the run identity every snapshot carries.
	Identity Identity
	// DAGTexts holds each DAG document's canonical text, which every
	// activation's provenance record repeats.
	DAGTexts map[string]string
}

// Revisions are the reference's compileWorkflow(...).revisions.
type Revisions struct {
	Control string
	DAGs    map[string]string
}

// Value returns the revisions as the reference's JSON object.
func (r Revisions) Value() map[string]any {
	dags := make(map[string]any, len(r.DAGs))
	for id, h := range r.DAGs {
		dags[id] = h
	}
	return map[string]any{"control": r.Control, "dags": dags}
}

// Identity is the run identity the reference stores in every snapshot and
// compares, canonically, on resume: the exact canonical texts of the
// document, statechart and DAGs, the lowering version and the task
// versions.
type Identity struct {
	Document     string
	Lowering     string
	Control      string
	DAGs         string
	TaskVersions map[string]string
}

// Value returns the identity as the reference's JSON object.
func (id Identity) Value() map[string]any {
	return map[string]any{
		"document":     id.Document,
		"lowering":     id.Lowering,
		"control":      id.Control,
		"dags":         id.DAGs,
		"taskVersions": stringMap(id.TaskVersions),
	}
}

// Spec returns the declaration of state id, nil when there is none.
func (w *Workflow) Spec(id string) *Spec { return w.Lowered.Specs[id] }

// TaskVersionsValue returns TaskVersions as a JSON object.
func (w *Workflow) TaskVersionsValue() map[string]any { return stringMap(w.TaskVersions) }

// Compile lowers and compiles a workflow as the reference's
// compileWorkflow does before any run: the statechart, each work state's
// DAG in declaration order (its errors, JF0010…JF0019, carry paths into
// that DAG document) followed by its input query (JF0014 at
// <state id>/input).
func Compile(doc any, opts Options) (*Workflow, error) {
	l, err := Lower(doc)
	if err != nil {
		return nil, err
	}
	control := value.MustCanonical(l.FSM)
	w := &Workflow{
		Lowered:      l,
		Chart:        l.chart,
		DAGs:         make(map[string]*dag.DAG, len(l.Work)),
		Inputs:       make(map[string]*query.Query, len(l.Work)),
		Revisions:    Revisions{Control: value.HashContent(control), DAGs: make(map[string]string, len(l.Work))},
		TaskVersions: map[string]string{},
	}
	w.DAGTexts = make(map[string]string, len(l.Work))
	for _, id := range l.Work {
		w.DAGTexts[id] = value.MustCanonical(l.DAGs[id])
		revision := value.HashContent(w.DAGTexts[id])
		w.Revisions.DAGs[id] = revision
		region, versions, err := compileRegion(l.DAGs[id], opts.Tasks, revision)
		if err != nil {
			return nil, locateDAG(err, id, l.Specs[id].raw)
		}
		w.DAGs[id] = region
		for node, version := range versions {
			w.TaskVersions[id+"/"+node] = version
		}
		q, err := query.Compile(l.Specs[id].Input, query.Options{})
		if err != nil {
			return nil, fault.Wrap(fault.JF0014, "workflow input query failed to compile", id+"/input", err)
		}
		w.Inputs[id] = q
	}
	w.TaskVersionKeys = make([]string, 0, len(w.TaskVersions))
	for k := range w.TaskVersions {
		w.TaskVersionKeys = append(w.TaskVersionKeys, k)
	}
	// The reference sorts with <, which compares UTF-16 code units.
	sort.Slice(w.TaskVersionKeys, func(i, j int) bool {
		return value.CompareUTF16(w.TaskVersionKeys[i], w.TaskVersionKeys[j]) < 0
	})
	w.Identity = Identity{
		Document:     value.MustCanonical(l.Document),
		Lowering:     l.Version,
		Control:      control,
		DAGs:         value.MustCanonical(l.dagsValue()),
		TaskVersions: w.TaskVersions,
	}
	return w, nil
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CompileJSON decodes a document within value.DefaultLimits and compiles
// it. Text that is not JSON is JF0021 "workflow must be JSON".
func CompileJSON(data []byte, opts Options) (*Workflow, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	return Compile(doc, opts)
}

// locateDAG gives a DAG error, whose path is relative to the DAG document,
// the author's path: inside work.dag, or for the task shorthand the work
// member the lowered task node came from.
func locateDAG(err error, id string, spec map[string]any) error {
	var fe *fault.Error
	if !errors.As(err, &fe) || !fe.HasPath {
		return err
	}
	work, _ := spec["work"].(map[string]any)
	if _, inline := work["dag"]; inline {
		fe.Source, fe.HasSource = id+workPointer+"/dag"+fe.Path, true
		return err
	}
	source := id + workPointer
	for _, m := range taskMembers {
		from := "/nodes/task/" + m
		if m == "task" {
			from = "/nodes/task/run"
		}
		if fe.Path == from || strings.HasPrefix(fe.Path, from+"/") {
			source = id + workPointer + "/" + m + fe.Path[len(from):]
		}
	}
	fe.Source, fe.HasSource = source, true
	return err
}
