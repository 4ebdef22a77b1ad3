package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/policy"
)

// Get returns the latest deployment of name, or an error wrapping
// ErrWorkflowNotFound.
func (r *Registry) Get(ctx context.Context, name string) (Deployment, error) {
	idx, _, err := r.readIndex(ctx, name, false)
	if err != nil {
		return Deployment{}, err
	}
	return r.deployment(ctx, name, idx.Revisions[len(idx.Revisions)-1])
}

// GetRevision returns the deployment of one revision of name, or an error
// wrapping ErrWorkflowNotFound.
func (r *Registry) GetRevision(ctx context.Context, name, revision string) (Deployment, error) {
	idx, _, err := r.readIndex(ctx, name, false)
	if err != nil {
		return Deployment{}, err
	}
	for _, e := range idx.Revisions {
		if e.Revision == revision {
			return r.deployment(ctx, name, e)
		}
	}
	// The list may come from a lagging replica; ask the leader before
	// saying no.
	if idx, _, err = r.readIndex(ctx, name, true); err != nil {
		return Deployment{}, err
	}
	for _, e := range idx.Revisions {
		if e.Revision == revision {
			return r.deployment(ctx, name, e)
		}
	}
	return Deployment{}, fmt.Errorf("registry: workflow %q has no revision %q (bucket %q): %w", name, revision, r.b.Name(), ErrWorkflowNotFound)
}

func (r *Registry) deployment(ctx context.Context, name string, ref RevisionRef) (Deployment, error) {
	d, err := r.GetByHash(ctx, ref.Hash)
	if err != nil {
		return Deployment{}, fmt.Errorf("registry: workflow %q revision %q: %w", name, ref.Revision, err)
	}
	return Deployment{Name: name, Document: d, Deployed: ref.Deployed}, nil
}

// GetByHash returns the document stored under hash, or an error wrapping
// ErrDocumentNotFound.
func (r *Registry) GetByHash(ctx context.Context, hash string) (Document, error) {
	if !isHexHash(hash) {
		return Document{}, fmt.Errorf("registry: %q is not a workflow hash (64 lower-case hex digits): %w", hash, ErrDocumentNotFound)
	}
	key := docKeyPrefix + hash
	e, err := r.b.Get(ctx, key, false)
	if errors.Is(err, kvstore.ErrNoKey) {
		// Documents are written once, so a miss can only be a replica
		// that has not caught up: ask the leader.
		e, err = r.b.Get(ctx, key, true)
	}
	if errors.Is(err, kvstore.ErrNoKey) {
		return Document{}, fmt.Errorf("registry: workflow document %s in bucket %q: %w", key, r.b.Name(), ErrDocumentNotFound)
	}
	if err != nil {
		return Document{}, fmt.Errorf("registry: read workflow document %s in bucket %q: %w", key, r.b.Name(), err)
	}
	d, err := decodeDoc(e.Data)
	if err != nil {
		return Document{}, fmt.Errorf("registry: workflow document %s in bucket %q: %w", key, r.b.Name(), err)
	}
	if ContentHash(d.Doc, d.Policy) != hash {
		return Document{}, fmt.Errorf("registry: workflow document %s in bucket %q does not match its hash", key, r.b.Name())
	}
	d.Hash = hash
	d.TaskSubjects = r.taskSubjects(d.Tasks)
	return d, nil
}

// List returns every deployed workflow with its revisions, by name.
func (r *Registry) List(ctx context.Context) ([]Workflow, error) {
	var out []Workflow
	var bad error
	err := r.b.Scan(ctx, nameKeyPrefix+jetstream.AllKeys, func(e jetstream.KeyValueEntry) {
		idx, err := decodeIndex(e.Value())
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("registry: key %s in bucket %q: %w", e.Key(), r.b.Name(), err))
			return
		}
		out = append(out, Workflow{Name: strings.TrimPrefix(e.Key(), nameKeyPrefix), Revisions: idx.Revisions})
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func isHexHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// nameIndex is the value under "name.<name>".
type nameIndex struct {
	Name      string        `json:"name"`
	Revisions []RevisionRef `json:"revisions"`
}

// docRecord is the value under "doc.<hash>". Records written before
// policies existed have none, which means the defaults.
type docRecord struct {
	Revision string          `json:"revision"`
	Tasks    []TaskRef       `json:"tasks"`
	Doc      json.RawMessage `json:"doc"`
	Policy   json.RawMessage `json:"policy,omitempty"`
}

func encodeIndex(idx nameIndex) ([]byte, error) { return json.Marshal(idx) }

func decodeIndex(data []byte) (nameIndex, error) {
	var idx nameIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return nameIndex{}, fmt.Errorf("corrupt revision list: %w", err)
	}
	if len(idx.Revisions) == 0 {
		return nameIndex{}, errors.New("corrupt revision list: no revisions")
	}
	return idx, nil
}

func encodeDoc(d Document) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Keep the canonical text byte for byte: Marshal would rewrite <, >
	// and & inside the raw document as \u escapes.
	enc.SetEscapeHTML(false)
	rec := docRecord{Revision: d.Revision, Tasks: d.Tasks, Doc: d.Doc}
	if !d.Policy.Empty() {
		rec.Policy = d.Policy.Canonical()
	}
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func decodeDoc(data []byte) (Document, error) {
	var rec docRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return Document{}, fmt.Errorf("corrupt document record: %w", err)
	}
	if rec.Tasks == nil {
		rec.Tasks = []TaskRef{}
	}
	d := Document{Revision: rec.Revision, Tasks: rec.Tasks, Doc: []byte(rec.Doc)}
	if len(rec.Policy) > 0 {
		pol, err := policy.Parse(rec.Policy)
		if err != nil {
			return Document{}, fmt.Errorf("corrupt document record: %w", err)
		}
		if !pol.Empty() {
			d.Policy = pol
		}
	}
	return d, nil
}

// Latest returns the reference of name's latest revision, or an error
// wrapping ErrWorkflowNotFound. It reads only the revision list, so a
// caller that already holds that revision's document saves a read.
func (r *Registry) Latest(ctx context.Context, name string) (RevisionRef, error) {
	idx, _, err := r.readIndex(ctx, name, false)
	if err != nil {
		return RevisionRef{}, err
	}
	return idx.Revisions[len(idx.Revisions)-1], nil
}
