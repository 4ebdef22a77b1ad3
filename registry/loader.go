// Package registry is the workflow registry: Registry keeps deployed
// workflow documents in the workflow bucket, content-addressed and
// immutable, with the revisions of each name, and Loader turns them into
// the definitions runs step with, compiling each revision once and
// following the latest revisions.
package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/step"
)

// ErrUnknownWorkflow is wrapped when a start names a workflow (or
// revision) that is not deployed, or a run is pinned to one that vanished.
var ErrUnknownWorkflow = errors.New("unknown workflow")

// Reader is where a Loader reads deployed workflow documents from;
// *Registry is the production one. Errors wrapping ErrWorkflowNotFound or
// ErrDocumentNotFound mean "not deployed".
type Reader interface {
	// Get returns the latest deployment of name.
	Get(ctx context.Context, name string) (Deployment, error)
	// GetRevision returns one deployed revision of name.
	GetRevision(ctx context.Context, name, revision string) (Deployment, error)
}

// Loader reads deployments from the registry and compiles each document
// once. Deployed revisions are immutable, so (name, revision)
// and hash entries never go stale; "latest" comes from a watch of the
// revision lists between Watch and Unwatch, else from a read.
type Loader struct {
	reg  Reader
	opts run.Options
	max  int

	mu     sync.Mutex
	byRev  map[string]*step.Definition
	byHash map[string]*workflow.Workflow

	// index follows the latest revision of every name between Start and
	// Stop, so that a start reads nothing (nil: read the revision list).
	index atomic.Pointer[LatestIndex]
}

// DefaultCacheSize is NewLoader's cache size when given none.
const DefaultCacheSize = 256

// NewLoader returns a loader of the deployments in reg. opts are the
// reducer's host settings for deployments that carry no policy of their
// own (a deployment's policy replaces their retry rule and timeouts);
// cacheSize bounds the compiled revisions kept (0: DefaultCacheSize).
func NewLoader(reg Reader, opts run.Options, cacheSize int) (*Loader, error) {
	if reg == nil {
		return nil, errors.New("registry: nil Registry (pass the workflow registry the runs' definitions are deployed to)")
	}
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	return &Loader{
		reg: reg, opts: opts, max: cacheSize,
		byRev: make(map[string]*step.Definition), byHash: make(map[string]*workflow.Workflow),
	}, nil
}

// latestReader is a Reader that can name its latest revision without
// reading the document (*Registry is one).
type latestReader interface {
	Latest(ctx context.Context, name string) (RevisionRef, error)
}

// latestWatcher is a Reader that can follow its latest revisions
// (*Registry is one).
type latestWatcher interface {
	WatchLatest(ctx context.Context) (*LatestIndex, error)
}

// Watch starts following the latest revisions, if the registry can.
func (l *Loader) Watch(ctx context.Context) error {
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

// Unwatch stops what Watch started.
func (l *Loader) Unwatch() {
	if idx := l.index.Swap(nil); idx != nil {
		idx.Stop()
	}
}

// CachedLatest is name's latest revision as the watch last saw it.
func (l *Loader) CachedLatest(name string) (string, bool) {
	idx := l.index.Load()
	if idx == nil {
		return "", false
	}
	ref, ok := idx.Latest(name)
	return ref.Revision, ok
}

// Load returns the definition of revision of name ("" = the latest).
// Errors wrap ErrUnknownWorkflow when it is not deployed, and
// step.ErrPermanent when its document no longer compiles.
func (l *Loader) Load(ctx context.Context, name, revision string) (*step.Definition, error) {
	if revision == "" {
		// Every start naming no revision asks for the latest: the watch
		// knows it (it lags a deploy by the time the change takes to
		// reach this process), else one read of the revision list.
		revision, _ = l.CachedLatest(name)
	}
	if lr, ok := l.reg.(latestReader); ok && revision == "" {
		ref, err := lr.Latest(ctx, name)
		if errors.Is(err, ErrWorkflowNotFound) {
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
	var dep Deployment
	var err error
	if revision == "" {
		dep, err = l.reg.Get(ctx, name)
	} else {
		dep, err = l.reg.GetRevision(ctx, name, revision)
	}
	if errors.Is(err, ErrWorkflowNotFound) || errors.Is(err, ErrDocumentNotFound) {
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
			return nil, fmt.Errorf("%w: workflow %q revision %q no longer compiles: %w", step.ErrPermanent, name, dep.Revision, err)
		}
	}
	d := &step.Definition{
		Name: name, Revision: dep.Revision, Program: step.Engine{Workflow: wf, Options: l.runOptions(dep)},
		Retention: dep.Policy.Retention(), Archive: dep.Policy.Archive(),
		Children: childBindings(dep.Policy),
		Queue:    queueOf(dep.Policy),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	putBounded(l.byHash, dep.Hash, wf, l.max)
	putBounded(l.byRev, name+"@"+dep.Revision, d, l.max)
	return d, nil
}

// runOptions are the reducer options of a deployment: its own task
// policy, so that every dispatcher and every replay of a run pinned to it
// retry alike; the loader's options only for a deployment without one.
func (l *Loader) runOptions(dep Deployment) run.Options {
	opts := l.opts
	if len(dep.Policy.Keys()) > 0 {
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

// childBindings are a policy's child bindings as the step reads them.
// queueOf is the deployment's queue rule, nil when its policy queues no
// task version.
func queueOf(p *policy.Policy) step.QueueFunc {
	if !p.Queues() {
		return nil
	}
	return func(task, version string, input any, started *int) (int, string, int, bool) {
		q, ok := p.Queue(task, version)
		if !ok {
			return 0, "", 0, false
		}
		priority, key := q.Of(input, started)
		return priority, key, q.MaxPerKey, true
	}
}

func childBindings(p *policy.Policy) map[string]step.ChildBinding {
	ch := p.Children()
	if len(ch) == 0 {
		return nil
	}
	out := make(map[string]step.ChildBinding, len(ch))
	for k, c := range ch {
		out[k] = step.ChildBinding{Workflow: c.Workflow, Cascade: c.Cascade}
	}
	return out
}
