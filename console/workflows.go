package console

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/graph"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

// definitions compiles each deployed revision once: revisions are
// immutable, so an entry never goes stale.
type definitions struct {
	reg *registry.Registry

	mu   sync.Mutex
	byID map[string]*definition
}

type definition struct {
	dep registry.Deployment
	wf  *workflow.Workflow
}

// maxDefinitions bounds the cache; past it, an arbitrary entry goes.
const maxDefinitions = 256

func newDefinitions(reg *registry.Registry) *definitions {
	return &definitions{reg: reg, byID: map[string]*definition{}}
}

// get returns a compiled revision of name; revision "" is the latest.
func (d *definitions) get(ctx context.Context, name, revision string) (*definition, error) {
	if err := subjects.CheckWorkflowName(name); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	key := name + "@" + revision
	if revision != "" {
		d.mu.Lock()
		def := d.byID[key]
		d.mu.Unlock()
		if def != nil {
			return def, nil
		}
	}
	var dep registry.Deployment
	var err error
	if revision == "" {
		dep, err = d.reg.Get(ctx, name)
	} else {
		dep, err = d.reg.GetRevision(ctx, name, revision)
	}
	if err != nil {
		return nil, err
	}
	wf, err := workflow.CompileJSON(dep.Doc, workflow.Options{})
	if err != nil {
		return nil, fmt.Errorf("workflow %q revision %q no longer compiles: %w", name, dep.Revision, err)
	}
	def := &definition{dep: dep, wf: wf}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byID) >= maxDefinitions {
		for k := range d.byID {
			delete(d.byID, k)
			break
		}
	}
	d.byID[name+"@"+dep.Revision] = def
	return def, nil
}

// workflowsView lists deployed workflows.
type workflowsView struct {
	Workflows []workflowItem `json:"workflows"`
}

type workflowItem struct {
	Name      string         `json:"name"`
	Latest    string         `json:"latest"`
	Revisions []revisionItem `json:"revisions"`
	Active    int            `json:"active"`
}

type revisionItem struct {
	Revision string `json:"revision"`
	Hash     string `json:"hash"`
	Deployed int64  `json:"deployed"`
	// Active counts the revision's running and waiting runs.
	Active int `json:"active"`
}

func (c *Console) apiWorkflows(w http.ResponseWriter, r *http.Request) {
	list, err := c.cfg.Registry.List(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	v := workflowsView{Workflows: []workflowItem{}}
	for _, wf := range list {
		v.Workflows = append(v.Workflows, c.workflowItem(wf))
	}
	writeJSON(w, http.StatusOK, v)
}

func (c *Console) workflowItem(wf registry.Workflow) workflowItem {
	active := c.idx.activeRuns(wf.Name)
	it := workflowItem{Name: wf.Name, Latest: wf.Latest().Revision, Revisions: []revisionItem{}}
	for i := len(wf.Revisions) - 1; i >= 0; i-- {
		rv := wf.Revisions[i]
		it.Revisions = append(it.Revisions, revisionItem{Revision: rv.Revision, Hash: rv.Hash, Deployed: rv.Deployed.UnixMilli(), Active: active[rv.Revision]})
		it.Active += active[rv.Revision]
	}
	return it
}

// workflowView is one revision of a workflow with its diagram.
type workflowView struct {
	workflowItem
	Revision   string      `json:"revision"`
	Deployed   int64       `json:"deployed"`
	Chart      string      `json:"chart"`
	WorkStates []workState `json:"workStates"`
	Document   rawJSON     `json:"document"`
	// CheckRevisions are the revisions the revision check offers, newest
	// first (checkRevisions).
	CheckRevisions []string `json:"checkRevisions"`
}

// workState is a work state offered for its DAG.
type workState struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Tasks  int    `json:"tasks"`
	Visits int64  `json:"visits,omitempty"`
}

func workStates(wf *workflow.Workflow, visits map[string]int64) []workState {
	out := []workState{}
	for _, id := range wf.Lowered.Work {
		n := 0
		d := wf.DAGs[id]
		for _, node := range d.Nodes() {
			if info, _ := d.Node(node); info.Task != "" {
				n++
			}
		}
		out = append(out, workState{ID: id, Name: graph.Shorten(stateLabel(id), 80), Tasks: n, Visits: visits[id]})
	}
	return out
}

func (c *Console) apiWorkflow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	def, err := c.defs.get(r.Context(), name, r.URL.Query().Get("revision"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	list, err := c.cfg.Registry.List(r.Context())
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	v := workflowView{Revision: def.dep.Revision, Deployed: def.dep.Deployed.UnixMilli(), Document: rawJSON(def.dep.Doc)}
	v.CheckRevisions = []string{}
	for _, wf := range list {
		if wf.Name == name {
			v.workflowItem = c.workflowItem(wf)
			v.CheckRevisions = checkRevisions(wf.Revisions, c.idx.activeRuns(name))
		}
	}
	d := graph.Statechart(def.wf, nil)
	d.Title = name + " " + def.dep.Revision
	v.Chart = d.SVG(graph.SVGOptions{IDPrefix: "chart"})
	v.WorkStates = workStates(def.wf, nil)
	writeJSON(w, http.StatusOK, v)
}

// dagView is one work state's DAG.
type dagView struct {
	State string    `json:"state"`
	SVG   string    `json:"svg"`
	Nodes []dagNode `json:"nodes"`
}

type dagNode struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Task    string `json:"task,omitempty"`
	Version string `json:"version,omitempty"`
	Status  string `json:"status,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

func dagOf(wf *workflow.Workflow, title, state string, marks map[string]graph.NodeMark) (*dagView, error) {
	d, err := graph.DAG(wf, state, marks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	d.Title = title
	v := &dagView{State: state, SVG: d.SVG(graph.SVGOptions{IDPrefix: "dag"}), Nodes: []dagNode{}}
	for _, id := range wf.DAGs[state].Nodes() {
		info, _ := wf.DAGs[state].Node(id)
		mk := marks[id]
		v.Nodes = append(v.Nodes, dagNode{ID: id, Kind: string(info.Kind), Task: info.Task, Version: info.Version, Status: string(mk.Status), Attempt: mk.Attempt})
	}
	return v, nil
}

func (c *Console) apiWorkflowDAG(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	def, err := c.defs.get(r.Context(), name, r.URL.Query().Get("revision"))
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	v, err := dagOf(def.wf, name+" "+stateLabel(r.URL.Query().Get("state")), r.URL.Query().Get("state"), nil)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, v)
}
