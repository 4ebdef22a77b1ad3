package dag

import (
	"sort"

	"github.com/jetflow/jetflow/engine/value"
)

// TaskVersions returns the declared task versions keyed by node id, each
// id escaped as a JSON Pointer segment (FLOW-FORMAT §7.8); tasks that
// declare no version are absent. The map is a copy; TaskVersionKeys gives
// its keys in the reference's sorted order.
func (d *DAG) TaskVersions() map[string]string {
	out := make(map[string]string, len(d.versions))
	for k, v := range d.versions {
		out[k] = v
	}
	return out
}

// TaskVersionKeys returns the keys of TaskVersions sorted by UTF-16 code
// units, as the reference sorts them.
func (d *DAG) TaskVersionKeys() []string {
	keys := make([]string, 0, len(d.versions))
	for k := range d.versions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return value.CompareUTF16(keys[i], keys[j]) < 0 })
	return keys
}

// Revision returns the provenance revision: Options.Revision, or the
// workflow's default, the content hash of the document's canonical text.
func (d *DAG) Revision() (string, error) {
	if d.revision != "" {
		return d.revision, nil
	}
	doc, err := value.Canonical(d.doc)
	if err != nil {
		return "", err
	}
	return value.HashContent(doc), nil
}

// Identity returns the provenance identity the reference hands its
// checkpoint store for a run of input (§7.9), the record a workflow saves
// as its pending activation's identity: {revision, document (canonical
// text), input (canonical text), taskVersions}.
func (d *DAG) Identity(input any) (map[string]any, error) {
	revision, err := d.Revision()
	if err != nil {
		return nil, err
	}
	doc, err := value.Canonical(d.doc)
	if err != nil {
		return nil, err
	}
	in, err := value.Canonical(input)
	if err != nil {
		return nil, err
	}
	versions := make(map[string]any, len(d.versions))
	for k, v := range d.versions {
		versions[k] = v
	}
	return map[string]any{"revision": revision, "document": doc, "input": in, "taskVersions": versions}, nil
}
