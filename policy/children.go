package policy

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
)

// ChildrenKey is the key of the deployment's child bindings, beside the
// task rules: {"$children": {"review@1": {"workflow": "review"}}}. Each
// binds one task version to another deployed workflow: invoking the task
// starts a child run of it instead of publishing a worker invocation
// (docs/CHILDREN.md).
const ChildrenKey = "$children"

// Fields of a child binding.
const (
	fieldWorkflow = "workflow"
	fieldCascade  = "cascade"
	maxChildren   = 1000
)

// Child is one binding of a task version to a workflow.
type Child struct {
	// Workflow is the deployed workflow a child run runs, at its latest
	// revision when the child starts.
	Workflow string
	// Cascade says whether the parent's cancel, terminate, pause and
	// resume reach the child. Default true; false detaches the child
	// from its parent's operations (a child whose attempt the parent
	// abandons while the parent goes on is cancelled either way).
	Cascade bool
}

// Children are p's bindings keyed "task@version", nil when none.
func (p *Policy) Children() map[string]Child {
	if p == nil || len(p.children) == 0 {
		return nil
	}
	out := make(map[string]Child, len(p.children))
	for k, c := range p.children {
		out[k] = c
	}
	return out
}

// ChildKeys are p's bound task versions, sorted.
func (p *Policy) ChildKeys() []string {
	if p == nil {
		return nil
	}
	keys := make([]string, 0, len(p.children))
	for k := range p.children {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ChildPointer is the JSON Pointer of the binding of key in a policy
// file, for errors found beyond the file (an unknown workflow).
func ChildPointer(key string) string {
	return "/" + value.EncodePointerSegment(ChildrenKey) + "/" + value.EncodePointerSegment(key)
}

// parseChildren reads the "$children" entry.
func (p *Policy) parseChildren(raw json.RawMessage, ptr string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := openObject(dec, ptr, `must be an object mapping "task@version" to {"workflow": NAME}`); err != nil {
		return err
	}
	p.children = map[string]Child{}
	for dec.More() {
		key, err := nextKey(dec, ptr)
		if err != nil {
			return err
		}
		kptr := ptr + "/" + value.EncodePointerSegment(key)
		if _, dup := p.children[key]; dup {
			return errAt(kptr, "the key %q appears twice", key)
		}
		if len(p.children) == maxChildren {
			return errAt(kptr, "more than %d child bindings", maxChildren)
		}
		task, version, ok := strings.Cut(key, "@")
		if !ok {
			return errAt(kptr, `key %q binds no version: a child binding names one task version, "task@version"`, key)
		}
		if err := subjects.CheckTask(task); err != nil {
			return errAt(kptr, "key %q: %v", key, err)
		}
		if err := subjects.CheckVersion(version); err != nil {
			return errAt(kptr, "key %q: %v", key, err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return syntaxError(kptr, err)
		}
		c, err := parseChild(v, kptr)
		if err != nil {
			return err
		}
		p.children[key] = c
	}
	return nil
}

func parseChild(v any, ptr string) (Child, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Child{}, errAt(ptr, `must be an object {"workflow": NAME, "cascade": BOOL}, not %s`, describe(v))
	}
	c := Child{Cascade: true}
	for _, field := range sortedFields(obj) {
		fptr := ptr + "/" + value.EncodePointerSegment(field)
		switch field {
		case fieldWorkflow:
			name, ok := obj[field].(string)
			if !ok {
				return Child{}, errAt(fptr, "must be a workflow name, not %s", describe(obj[field]))
			}
			if err := subjects.CheckWorkflowName(name); err != nil {
				return Child{}, errAt(fptr, "%v", err)
			}
			c.Workflow = name
		case fieldCascade:
			b, ok := obj[field].(bool)
			if !ok {
				return Child{}, errAt(fptr, "must be true or false, not %s", describe(obj[field]))
			}
			c.Cascade = b
		default:
			return Child{}, errAt(fptr, "%q is not a field of a child binding (fields: %s, %s)", field, fieldWorkflow, fieldCascade)
		}
	}
	if c.Workflow == "" {
		return Child{}, errAt(ptr, "names no %q: the workflow a child run runs", fieldWorkflow)
	}
	return c, nil
}

func sortedFields(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// childrenTree is the canonical form of "$children", nil when unset.
func (p *Policy) childrenTree() map[string]any {
	if len(p.children) == 0 {
		return nil
	}
	t := map[string]any{}
	for k, c := range p.children {
		m := map[string]any{fieldWorkflow: c.Workflow}
		if !c.Cascade {
			m[fieldCascade] = false
		}
		t[k] = m
	}
	return t
}
