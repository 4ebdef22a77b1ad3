package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/subjects"
)

// Sentinels for the outcomes callers branch on. Returned errors wrap them
// with the bucket and key concerned; test with errors.Is.
var (
	// ErrWorkflowNotFound: no workflow (or no such revision of it) is
	// deployed under the name.
	ErrWorkflowNotFound = errors.New("workflow not found")
	// ErrDocumentNotFound: no workflow document is stored under the hash.
	ErrDocumentNotFound = errors.New("workflow document not found")
	// ErrRevisionImmutable: a different document or policy was deployed
	// under a (name, revision) pair that already exists.
	ErrRevisionImmutable = errors.New("workflow revision already deployed with a different document or policy")
)

// TaskRef names a task version a workflow invokes.
type TaskRef struct {
	Task    string `json:"task"`
	Version string `json:"version"`
}

// Info is what validation learns about a workflow document.
type Info struct {
	// Tasks are the task versions the workflow may invoke (order and
	// duplicates do not matter).
	Tasks []TaskRef
}

// ValidateFunc checks a decoded workflow document (the engine/value JSON
// model) and returns what the registry records about it, or the engine's
// error, which Deploy returns wrapped.
type ValidateFunc func(doc any) (Info, error)

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Validate compiles a document before it is deployed; the caller wires
	// the engine in. Required by Deploy; reading works without it.
	Validate ValidateFunc
	// Now stamps deployments. Default time.Now.
	Now func() time.Time
	// Limits bound the documents Deploy decodes. Default value.DefaultLimits.
	Limits value.Limits
	// RetryFor bounds the compare-and-swap retries of a deploy racing
	// another. Default kvstore.DefaultRetryFor (30s).
	RetryFor time.Duration
}

// Document is one stored workflow document with the deployment's task
// policy. Documents are immutable and keyed by Hash, which covers both,
// so a run that pinned a revision always finds the document and the
// policy it ran under.
type Document struct {
	// Hash is the content address of Doc and Policy (ContentHash).
	Hash string
	// Revision is the document's "revision" member.
	Revision string
	// Tasks are the task versions it invokes, sorted, without duplicates.
	Tasks []TaskRef
	// TaskSubjects are the subjects those tasks are published to, in the
	// order of Tasks.
	TaskSubjects []string
	// Doc is the document in canonical JSON (RFC 8785).
	Doc []byte
	// Policy is the deployment's task retry and timeout policy; nil means
	// the defaults (as for every deployment made before policies existed).
	Policy *policy.Policy
}

// ContentHash is the content address of a canonical document and its
// policy's canonical form: the hex SHA-256 of the document alone when the
// policy is empty (so deployments without one keep their hash), else of
// the document, a NUL byte (never in canonical JSON) and the policy.
func ContentHash(doc []byte, pol *policy.Policy) string {
	h := sha256.New()
	h.Write(doc)
	if !pol.Empty() {
		h.Write([]byte{0})
		h.Write(pol.Canonical())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Deployment is a document deployed under a workflow name.
type Deployment struct {
	Name string
	Document
	Deployed time.Time
}

// RevisionRef is one deployed revision of a workflow.
type RevisionRef struct {
	Revision string    `json:"revision"`
	Hash     string    `json:"hash"`
	Deployed time.Time `json:"deployed"`
}

// Workflow lists a name's deployed revisions, oldest first; the last is
// the latest.
type Workflow struct {
	Name      string
	Revisions []RevisionRef
}

// Latest is the most recently deployed revision.
func (w Workflow) Latest() RevisionRef { return w.Revisions[len(w.Revisions)-1] }

// Registry keeps deployed workflows in the workflow bucket: each document
// under "doc.<hash>" (written once), and under "name.<name>" the list of
// revisions deployed under that name.
type Registry struct {
	b     *kvstore.Bucket
	names subjects.Names
	cfg   RegistryConfig
}

// Keys inside the workflow bucket.
const (
	docKeyPrefix  = "doc."
	nameKeyPrefix = "name."
)

// OpenRegistry binds the workflow bucket of names (it must be provisioned).
func OpenRegistry(ctx context.Context, js jetstream.JetStream, names subjects.Names, cfg RegistryConfig) (*Registry, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b, err := kvstore.BindBucket(ctx, js, names, names.WorkflowBucket())
	if err != nil {
		return nil, err
	}
	return &Registry{b: b, names: names, cfg: cfg}, nil
}

// Bucket is the workflow bucket's name.
func (r *Registry) Bucket() string { return r.b.Name() }

// Deploy validates doc, stores it and makes it the latest revision of
// name. Deploying a document already deployed under name returns the
// existing deployment unchanged (even if it is not the latest). A
// different document with a revision already deployed under name is
// refused with ErrRevisionImmutable: revisions never change, so runs that
// pinned one keep their definition.
func (r *Registry) Deploy(ctx context.Context, name string, doc []byte) (Deployment, error) {
	return r.DeployWithPolicy(ctx, name, doc, nil)
}

// DeployWithPolicy is Deploy with the deployment's task policy (nil or
// empty: the defaults). The policy is part of the revision: deploying the
// same revision again with another policy is refused with
// ErrRevisionImmutable too, since runs pinned to it replay under it.
func (r *Registry) DeployWithPolicy(ctx context.Context, name string, doc []byte, pol *policy.Policy) (Deployment, error) {
	if err := subjects.CheckWorkflowName(name); err != nil {
		return Deployment{}, fmt.Errorf("registry: deploy: %w", err)
	}
	if r.cfg.Validate == nil {
		return Deployment{}, errors.New("registry: deploy: the Registry has no Validate function (set RegistryConfig.Validate to the engine's workflow compiler)")
	}
	d, err := r.prepare(name, doc, pol)
	if err != nil {
		return Deployment{}, err
	}
	if err := r.checkChildren(ctx, d); err != nil {
		return Deployment{}, err
	}
	if err := r.storeDocument(ctx, d.Document); err != nil {
		return Deployment{}, err
	}
	return kvstore.Retry(ctx, r.cfg.RetryFor, func() (Deployment, error) { return r.link(ctx, d) })
}

// prepare decodes, validates and hashes doc with its policy.
func (r *Registry) prepare(name string, raw []byte, pol *policy.Policy) (Deployment, error) {
	doc, err := value.Decode(raw, r.cfg.Limits)
	if err != nil {
		return Deployment{}, fmt.Errorf("registry: deploy workflow %q: %w", name, err)
	}
	info, err := r.cfg.Validate(doc)
	if err != nil {
		return Deployment{}, fmt.Errorf("registry: deploy workflow %q: invalid document: %w", name, err)
	}
	obj, _ := doc.(map[string]any)
	revision, _ := obj["revision"].(string)
	if revision == "" {
		return Deployment{}, fmt.Errorf("registry: deploy workflow %q: the document has no nonblank string member \"revision\"", name)
	}
	canon, err := value.Canonical(doc)
	if err != nil {
		return Deployment{}, fmt.Errorf("registry: deploy workflow %q: %w", name, err)
	}
	tasks, err := normalizeTasks(info.Tasks)
	if err != nil {
		return Deployment{}, fmt.Errorf("registry: deploy workflow %q revision %q: %w", name, revision, err)
	}
	if pol.Empty() {
		pol = nil
	}
	d := Deployment{Name: name, Document: Document{
		Hash: ContentHash([]byte(canon), pol), Revision: revision, Tasks: tasks, Doc: []byte(canon), Policy: pol,
	}}
	d.TaskSubjects = r.taskSubjects(tasks)
	return d, nil
}

func normalizeTasks(in []TaskRef) ([]TaskRef, error) {
	seen := map[TaskRef]bool{}
	out := make([]TaskRef, 0, len(in))
	for _, t := range in {
		if err := subjects.CheckTask(t.Task); err != nil {
			return nil, err
		}
		if err := subjects.CheckVersion(t.Version); err != nil {
			return nil, fmt.Errorf("task %q: %w", t.Task, err)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

func (r *Registry) taskSubjects(tasks []TaskRef) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = r.names.Task(t.Task, t.Version)
	}
	return out
}

// storeDocument writes the document under its hash once.
func (r *Registry) storeDocument(ctx context.Context, d Document) error {
	data, err := encodeDoc(d)
	if err != nil {
		return err
	}
	key := docKeyPrefix + d.Hash
	_, err = kvstore.Retry(ctx, r.cfg.RetryFor, func() (uint64, error) {
		rev, err := r.b.KV().Create(ctx, key, data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return rev, nil // same hash, same content
		}
		return rev, kvstore.Classify(err)
	})
	if err != nil {
		return fmt.Errorf("registry: store workflow document %s in bucket %q: %w", key, r.b.Name(), err)
	}
	return nil
}

// link adds d to its name's revision list by compare-and-swap; conflicts
// come back as transient errors for retry to repeat.
func (r *Registry) link(ctx context.Context, d Deployment) (Deployment, error) {
	key := nameKeyPrefix + d.Name
	idx, rev, err := r.readIndex(ctx, d.Name, true)
	if err != nil && !errors.Is(err, ErrWorkflowNotFound) {
		return Deployment{}, kvstore.Classify(err)
	}
	for _, e := range idx.Revisions {
		if e.Revision != d.Revision {
			continue
		}
		if e.Hash == d.Hash {
			d.Deployed = e.Deployed
			return d, nil
		}
		return Deployment{}, kvstore.Permanent(fmt.Errorf("registry: deploy workflow %q revision %q (hash %s): %w as hash %s (a revision's document and policy never change: runs pinned to it replay under them); deploy a changed document or policy under a new revision of the document",
			d.Name, d.Revision, d.Hash, ErrRevisionImmutable, e.Hash))
	}
	d.Deployed = r.cfg.Now().UTC()
	idx.Name = d.Name
	idx.Revisions = append(idx.Revisions, RevisionRef{Revision: d.Revision, Hash: d.Hash, Deployed: d.Deployed})
	data, err := encodeIndex(idx)
	if err != nil {
		return Deployment{}, kvstore.Permanent(err)
	}
	if rev == 0 {
		_, err = r.b.KV().Create(ctx, key, data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Deployment{}, fmt.Errorf("registry: workflow %q deployed concurrently: %w", d.Name, err)
		}
	} else {
		_, err = r.b.KV().Update(ctx, key, data, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return Deployment{}, fmt.Errorf("registry: workflow %q deployed concurrently: %w", d.Name, err)
		}
	}
	if err != nil {
		return Deployment{}, kvstore.Classify(fmt.Errorf("registry: record workflow %q revision %q under key %s in bucket %q: %w", d.Name, d.Revision, key, r.b.Name(), err))
	}
	return d, nil
}

// readIndex reads a name's revision list; a missing name gives an empty
// list, revision 0 and ErrWorkflowNotFound.
func (r *Registry) readIndex(ctx context.Context, name string, fromLeader bool) (nameIndex, uint64, error) {
	key := nameKeyPrefix + name
	e, err := r.b.Get(ctx, key, fromLeader)
	if errors.Is(err, kvstore.ErrNoKey) && !fromLeader {
		// A lagging replica may not have a fresh deployment yet.
		e, err = r.b.Get(ctx, key, true)
	}
	if errors.Is(err, kvstore.ErrNoKey) {
		return nameIndex{}, 0, fmt.Errorf("registry: workflow %q (key %s in bucket %q): %w", name, key, r.b.Name(), ErrWorkflowNotFound)
	}
	if err != nil {
		return nameIndex{}, 0, fmt.Errorf("registry: read workflow %q (key %s in bucket %q): %w", name, key, r.b.Name(), err)
	}
	idx, err := decodeIndex(e.Data)
	if err != nil {
		return nameIndex{}, 0, fmt.Errorf("registry: workflow %q (key %s in bucket %q): %w", name, key, r.b.Name(), err)
	}
	return idx, e.Revision, nil
}
