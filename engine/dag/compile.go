package dag

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// Compile validates a jaren-dag document and compiles every embedded query.
// It checks in the reference's order, walking members in JavaScript's key
// order, so the first error reported is the reference's: the same JF0010–
// JF0019 code, reason and document path. A malformed registry is a plain
// error, as it is the caller's mistake rather than the document's.
func Compile(doc any, opts Options) (*DAG, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fault.New(fault.JF0010, "the dag document must be an object", "")
	}
	if v, has := root["$dag"]; !has || v != "0.1" {
		got := "undefined"
		if has {
			got = value.Stringify(v)
		}
		return nil, fault.New(fault.JF0010,
			"the \"$dag\" member is required and must be '0.1' (got "+got+")", "/$dag")
	}
	decls, ok := root["nodes"].(map[string]any)
	if !ok {
		return nil, fault.New(fault.JF0011,
			"the \"nodes\" member must be an object of node declarations", "/nodes")
	}
	d := &DAG{doc: doc, revision: opts.Revision, index: map[string]int{}}
	order := value.Keys(decls)
	durable := false
	for _, id := range order {
		if m, ok := decls[id].(map[string]any); ok && m["checkpoint"] == true {
			durable = true
		}
	}
	for _, id := range order {
		n, err := compileNode(id, decls[id], durable, opts.Tasks)
		if err != nil {
			return nil, err
		}
		d.index[id] = len(d.nodes)
		d.nodes = append(d.nodes, n)
	}
	d.output = -1
	outputs := 0
	for i, n := range d.nodes {
		if n.Kind == KindOutput {
			outputs++
			if d.output < 0 {
				d.output = i
			}
		}
	}
	if outputs != 1 {
		return nil, fault.New(fault.JF0017,
			fmt.Sprintf("a dag declares exactly one output node (found %d)", outputs), "/nodes")
	}
	if err := d.compileEdges(root["edges"]); err != nil {
		return nil, err
	}
	if err := d.checkWiring(); err != nil {
		return nil, err
	}
	if err := d.checkAcyclic(root["edges"].([]any)); err != nil {
		return nil, err
	}
	d.rankNodes()
	d.versions = map[string]string{}
	for _, n := range d.nodes {
		if n.Kind == KindTask && n.Version != "" {
			d.versions[value.EncodePointerSegment(n.ID)] = n.Version
		}
	}
	return d, nil
}

func isKind(k any) (Kind, bool) {
	s, ok := k.(string)
	if !ok {
		return "", false
	}
	for _, kind := range kinds {
		if Kind(s) == kind {
			return kind, true
		}
	}
	return "", false
}

func kindList() string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = string(k)
	}
	return strings.Join(parts, "|")
}

func compileNode(id string, raw any, durable bool, registry map[string]string) (*node, error) {
	base := "/nodes/" + value.EncodePointerSegment(id)
	decl, isObj := raw.(map[string]any)
	kind, known := isKind(decl["kind"])
	if !isObj || !known {
		path := base
		if isObj {
			path = base + "/kind"
		}
		return nil, fault.New(fault.JF0011,
			"node '"+id+"' must be an object with a kind from "+kindList(), path)
	}
	cp, hasCP := decl["checkpoint"]
	if _, isBool := cp.(bool); hasCP && !isBool {
		return nil, fault.New(fault.JF0011,
			"node '"+id+"' has a \"checkpoint\" member that is not a boolean", base+"/checkpoint")
	}
	n := &node{NodeInfo: NodeInfo{ID: id, Kind: kind, Path: base, Checkpoint: cp == true}}
	var err error
	switch kind {
	case KindConst:
		v, has := decl["value"]
		if !has {
			return nil, fault.New(fault.JF0011, "const node '"+id+"' must carry a \"value\" member", base)
		}
		n.value = v
	case KindQuery:
		q, has := decl["query"]
		if !has {
			return nil, fault.New(fault.JF0011, "query node '"+id+"' must carry a \"query\" member", base)
		}
		if n.query, err = compileEmbedded(q, base+"/query"); err != nil {
			return nil, err
		}
	case KindJSLT:
		doc, has := decl["stylesheet"]
		if !has {
			return nil, fault.New(fault.JF0011, "jslt node '"+id+"' must carry a \"stylesheet\" member", base)
		}
		if n.jslt, err = jslt.Compile(doc); err != nil {
			return nil, fault.Wrap(fault.JF0014, "the embedded document failed to compile: "+err.Error(),
				base+"/stylesheet", err)
		}
	case KindTask:
		if err := compileTask(n, decl, durable, registry); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func compileTask(n *node, decl map[string]any, durable bool, registry map[string]string) error {
	id, base := n.ID, n.Path
	run, ok := decl["run"].(string)
	if !ok || run == "" {
		return fault.New(fault.JF0011, "task node '"+id+"' must carry a non-empty string \"run\"", base+"/run")
	}
	rawVersion, declared := decl["version"]
	version, _ := rawVersion.(string)
	if declared && jsBlank(version) {
		return fault.New(fault.JF0011,
			"task node '"+id+"' has a \"version\" member that is not a non-empty string", base+"/version")
	}
	if durable && !declared {
		return fault.New(fault.JF0011,
			"task node '"+id+"' belongs to a workflow with checkpoints, so it must also declare a \"version\" — "+
				"a checkpointed result is replayed only while the handler that produced it is "+
				"the same one, and that identity has to be stated", base+"/version")
	}
	if registry != nil {
		entry, has := registry[run]
		if !has {
			return fault.New(fault.JF0018,
				"task node '"+id+"' names the handler '"+run+"', which the registry does not provide", base+"/run")
		}
		if entry != "" && jsBlank(entry) {
			return errors.New("dag: the registered handler '" + run + "' has a version that is not a non-empty string")
		}
		switch {
		case !declared:
		case entry == "":
			return fault.New(fault.JF0019,
				"task node '"+id+"' declares version '"+version+"', but the registry provides '"+run+
					"' as a bare handler with no version — register it as { run, version } so the two can be compared",
				base+"/version")
		case entry != version:
			return fault.New(fault.JF0019,
				"task node '"+id+"' declares version '"+version+"', but the registry provides '"+run+
					"' at version '"+entry+"'", base+"/version")
		}
	}
	n.Task, n.Version = run, version
	if w, has := decl["with"]; has {
		var err error
		if n.with, err = compileEmbedded(w, base+"/with"); err != nil {
			return err
		}
	}
	return nil
}

// compileEmbedded compiles a query found at path, wrapping its error as
// JF0014 whose reason quotes the query error's message.
func compileEmbedded(doc any, path string) (*query.Query, error) {
	q, err := query.Compile(doc, query.Options{})
	if err != nil {
		return nil, fault.Wrap(fault.JF0014, "the embedded document failed to compile: "+err.Error(), path, err)
	}
	return q, nil
}

// jsBlank reports whether s is empty once JavaScript's String.prototype.trim
// took its whitespace off, as the reference tests a version: that trims
// U+FEFF and keeps U+0085, where Go's strings.TrimSpace does the opposite.
func jsBlank(s string) bool {
	return strings.TrimFunc(s, isJSSpace) == ""
}

// isJSSpace is ECMAScript's WhiteSpace or LineTerminator: tab, line tab,
// form feed, space, no-break space, U+FEFF, the Zs category, line feed,
// carriage return and the line and paragraph separators.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', ' ', '\u00a0', '\ufeff', '\n', '\r', '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}
