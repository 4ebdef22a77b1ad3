package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/kvstore"
)

// ErrUnknownWorkflow is wrapped when a start names a workflow (or
// revision) that is not deployed, or a run is pinned to one that vanished.
var ErrUnknownWorkflow = errors.New("unknown workflow")

// Registry is where deployed workflow documents are read from;
// *kvstore.Registry is the production one. Errors wrapping
// kvstore.ErrWorkflowNotFound or kvstore.ErrDocumentNotFound mean "not
// deployed".
type Registry interface {
	// Get returns the latest deployment of name.
	Get(ctx context.Context, name string) (kvstore.Deployment, error)
	// GetRevision returns one deployed revision of name.
	GetRevision(ctx context.Context, name, revision string) (kvstore.Deployment, error)
}

// program is one compiled workflow revision bound to the reducer.
type program interface {
	apply(st *run.State, msg run.Message) (*run.State, []run.Effect, error)
}

// definition is a loaded workflow revision.
type definition struct {
	name, revision string
	prog           program
}

// loader resolves a workflow name and revision ("" = latest) to a
// compiled definition.
type loader interface {
	load(ctx context.Context, name, revision string) (*definition, error)
}

// engineProgram is run.Apply over one compiled workflow.
type engineProgram struct {
	wf   *workflow.Workflow
	opts run.Options
}

func (p engineProgram) apply(st *run.State, msg run.Message) (*run.State, []run.Effect, error) {
	return run.Apply(p.wf, st, msg, p.opts)
}

// engineLoader reads deployments from the registry and compiles each
// document once. Deployed revisions are immutable, so (name, revision)
// and hash entries never go stale; "latest" comes from a watch of the
// revision lists while the dispatcher runs, else from a read.
type engineLoader struct {
	reg  Registry
	opts run.Options
	max  int

	mu     sync.Mutex
	byRev  map[string]*definition
	byHash map[string]*workflow.Workflow

	// index follows the latest revision of every name between Start and
	// Stop, so that a start reads nothing (nil: read the revision list).
	index atomic.Pointer[kvstore.LatestIndex]
}

func newEngineLoader(cfg Config, reg Registry) (loader, error) {
	return &engineLoader{
		reg: reg, opts: cfg.RunOptions, max: cfg.DefinitionCacheSize,
		byRev: make(map[string]*definition), byHash: make(map[string]*workflow.Workflow),
	}, nil
}

// latestReader is a Registry that can name its latest revision without
// reading the document (*kvstore.Registry is one).
type latestReader interface {
	Latest(ctx context.Context, name string) (kvstore.RevisionRef, error)
}

// latestWatcher is a Registry that can follow its latest revisions
// (*kvstore.Registry is one).
type latestWatcher interface {
	WatchLatest(ctx context.Context) (*kvstore.LatestIndex, error)
}

// watch starts following the latest revisions, if the registry can.
func (l *engineLoader) watch(ctx context.Context) error {
	lw, ok := l.reg.(latestWatcher)
	if !ok {
		return nil
	}
	idx, err := lw.WatchLatest(ctx)
	if err != nil {
		return err
	}
	if old := l.index.Swap(idx); old != nil {
		old.Stop()
	}
	return nil
}

// unwatch stops what watch started.
func (l *engineLoader) unwatch() {
	if idx := l.index.Swap(nil); idx != nil {
		idx.Stop()
	}
}

// cachedLatest is name's latest revision as the watch last saw it.
func (l *engineLoader) cachedLatest(name string) (string, bool) {
	idx := l.index.Load()
	if idx == nil {
		return "", false
	}
	ref, ok := idx.Latest(name)
	return ref.Revision, ok
}

func (l *engineLoader) load(ctx context.Context, name, revision string) (*definition, error) {
	if revision == "" {
		// Every start naming no revision asks for the latest: the watch
		// knows it (it lags a deploy by the time the change takes to
		// reach this process), else one read of the revision list.
		revision, _ = l.cachedLatest(name)
	}
	if lr, ok := l.reg.(latestReader); ok && revision == "" {
		ref, err := lr.Latest(ctx, name)
		if errors.Is(err, kvstore.ErrWorkflowNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrUnknownWorkflow, err)
		}
		if err != nil {
			return nil, fmt.Errorf("load workflow %q: %w", name, err)
		}
		revision = ref.Revision
	}
	key := name + "@" + revision
	if revision != "" {
		l.mu.Lock()
		d := l.byRev[key]
		l.mu.Unlock()
		if d != nil {
			return d, nil
		}
	}
	var dep kvstore.Deployment
	var err error
	if revision == "" {
		dep, err = l.reg.Get(ctx, name)
	} else {
		dep, err = l.reg.GetRevision(ctx, name, revision)
	}
	if errors.Is(err, kvstore.ErrWorkflowNotFound) || errors.Is(err, kvstore.ErrDocumentNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrUnknownWorkflow, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load workflow %q: %w", name, err)
	}
	l.mu.Lock()
	wf := l.byHash[dep.Hash]
	l.mu.Unlock()
	if wf == nil {
		if wf, err = workflow.CompileJSON(dep.Doc, workflow.Options{}); err != nil {
			// Deploy validated it: the engine changed under a stored document.
			return nil, fmt.Errorf("%w: workflow %q revision %q no longer compiles: %w", errPermanent, name, dep.Revision, err)
		}
	}
	d := &definition{name: name, revision: dep.Revision, prog: engineProgram{wf: wf, opts: l.runOptions(dep)}}
	l.mu.Lock()
	defer l.mu.Unlock()
	putBounded(l.byHash, dep.Hash, wf, l.max)
	putBounded(l.byRev, name+"@"+dep.Revision, d, l.max)
	return d, nil
}

// runOptions are the reducer options of a deployment: its own task
// policy, so that every dispatcher and every replay of a run pinned to it
// retry alike; Config.RunOptions only for a deployment without one.
func (l *engineLoader) runOptions(dep kvstore.Deployment) run.Options {
	opts := l.opts
	if !dep.Policy.Empty() {
		// A deployment's policy replaces the retry rule and the timeouts
		// only: the dispatcher's evaluation budgets and event bounds
		// still hold.
		p := dep.Policy.RunOptions()
		opts.Retry, opts.Timeouts = p.Retry, p.Timeouts
	}
	if opts.Timeouts == nil {
		// Every attempt has a deadline, whoever configures nothing.
		opts.Timeouts = dep.Policy.Timeouts
	}
	return opts
}

// putBounded stores v, first evicting an arbitrary entry when m is full.
func putBounded[V any](m map[string]V, k string, v V, limit int) {
	if _, ok := m[k]; !ok && len(m) >= limit {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

func encodeState(st *run.State) ([]byte, error) { return run.Encode(st) }

func decodeState(data []byte) (*run.State, error) { return run.Decode(data) }
