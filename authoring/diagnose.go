package authoring

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/engine/workflow"
)

// Diagnostic is one refusal of a document: the engine's code, path and
// message unchanged, and where in the author's text it is.
type Diagnostic struct {
	Code string `json:"code"`
	// Path is the reference's JSON Pointer, nil when the error has none.
	Path *string `json:"path"`
	// Message is the engine's error text, as the reference composes it.
	Message string `json:"message"`
	// Line and Column (1-based, columns in characters) locate the member
	// at fault, or the nearest enclosing one present; 0 when unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// SourcePath is the JSON Pointer in the author's document the error is
	// about; it differs from Path for the lowered statechart's and DAGs'
	// paths and for undeclared targets.
	SourcePath *string `json:"source_path,omitempty"`
	// Reason is the text a person reads: the engine's reason, said
	// plainly where the reference's text misleads, with its cause.
	Reason string `json:"reason"`
	// Hint is what to do: the nearest valid name, the states in scope.
	Hint string `json:"hint,omitempty"`
}

// Diagnose explains err, a refusal of the document data by
// workflow.CompileJSON (or Compile, Lower).
func Diagnose(data []byte, err error) Diagnostic {
	d := Diagnostic{Code: string(fault.CodeOf(err)), Message: err.Error(), Reason: err.Error()}
	if d.Code == "" {
		d.Code = string(fault.JF0021)
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return d
	}
	d.Reason = fe.Reason
	if fe.HasPath {
		d.Path = &fe.Path
	}
	src, serr := Scan(data)
	if serr != nil {
		var se *SyntaxError
		if errors.As(serr, &se) && fe.Code == fault.JF0021 && fe.Path == "" {
			d.Reason, d.Line, d.Column = fe.Reason+": "+se.Msg, se.Line, se.Column
		}
		return d
	}
	doc, derr := value.Decode(data, value.Limits{})
	if derr != nil || !fe.HasPath {
		return d
	}
	source := fe.Path
	if fe.HasSource {
		source = fe.Source
	}
	e := explainer{doc: doc, src: src, fe: fe, d: &d}
	source = e.explain(source)
	if source != fe.Path {
		d.SourcePath = &source
	}
	d.Line, d.Column, _ = src.Position(source)
	return d
}

type explainer struct {
	doc any
	src *Source
	fe  *fault.Error
	d   *Diagnostic
}

// explain fills Reason and Hint and returns the source path, refined to
// the member at fault where the engine names only its container.
func (e explainer) explain(source string) string {
	reason := e.fe.Reason
	var cause *fault.Error
	if e.fe.Cause != nil && errors.As(e.fe.Cause, &cause) {
		if !strings.Contains(reason, cause.Reason) {
			e.d.Reason = reason + ": " + string(cause.Code) + " " + cause.Reason
		}
		if cause.HasPath && cause.Path != "" && strings.HasPrefix(string(cause.Code), "JQ") {
			source += cause.Path
		}
		if op, ok := quoted(cause.Reason, "unknown operator '"); ok {
			if at, found := findKey(e.doc, source, op); found {
				source = at
			}
		}
		return source
	}
	switch {
	case strings.HasPrefix(reason, "undeclared state '"):
		return e.undeclared(source)
	case strings.HasPrefix(reason, "unexpected '"), strings.HasPrefix(reason, "unknown "):
		e.unknownMember(source)
	case strings.HasPrefix(reason, "a state declares exactly one of"):
		return e.strayMember(source, stateMembers())
	case reason == "a task needs a nonblank task name and version":
		return e.strayMember(source, workflow.Members("task"))
	case reason == "a choice is {guard,to}":
		return e.strayMember(source, workflow.Members("choice"))
	case reason == "a wait branch is {event,to,guard?}":
		return e.strayMember(source, workflow.Members("wait"))
	case strings.HasPrefix(reason, "after is {ms,to}"):
		return e.strayMember(source, workflow.Members("delay"))
	case strings.HasPrefix(reason, "edge ") && strings.Contains(reason, " the undeclared node '"):
		e.undeclaredNode(source, reason)
	case reason == "initial must name a state in this scope":
		e.initial(source)
	case reason == "automatic cycle requires a state limit":
		e.d.Hint = `give a state on the cycle a "limit", the most visits a run may make to it`
	case strings.HasPrefix(reason, "a workflow requires"):
		e.d.Hint = `a workflow needs "$workflow": "0.2", a nonblank "revision", "initial" and "states"`
	}
	return source
}

// undeclared names the member that uses the target, the states in scope
// and the nearest of them.
func (e explainer) undeclared(source string) string {
	states := e.stateNames(e.fe.Path)
	scope := "states in this scope: " + strings.Join(states, ", ")
	member := lastSegment(source)
	target, present := lookup(e.doc, source)
	name, isString := target.(string)
	switch {
	case !present:
		e.d.Reason = "missing '" + member + "': name the state to go to"
		e.d.Hint = scope
	case !isString:
		e.d.Reason = "'" + member + "' must name a state, not " + value.MustCanonical(target)
		e.d.Hint = scope
	default:
		e.d.Reason = "undeclared state '" + name + "'"
		if near := Nearest(name, states); near != "" {
			e.d.Reason += " (did you mean '" + near + "'?)"
		}
		e.d.Hint = scope
	}
	return source
}

// undeclaredNode suggests the nearest node of the DAG for an edge's
// undeclared end; source is <dag>/edges/N/from or /to.
func (e explainer) undeclaredNode(source, reason string) {
	name, ok := quoted(reason[strings.Index(reason, " the undeclared node '")+1:], "the undeclared node '")
	dag := parentPath(parentPath(parentPath(source)))
	nodes, isObj := lookupObject(e.doc, dag+"/nodes")
	if !ok || !isObj {
		return
	}
	names := value.Keys(nodes)
	if near := Nearest(name, names); near != "" {
		e.d.Reason += " (did you mean '" + near + "'?)"
	}
	e.d.Hint = "nodes of this DAG: " + strings.Join(names, ", ")
}

// quoted returns the text between prefix and the next quote in s, when s
// starts with prefix.
func quoted(s, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "'")
	return name, ok
}

// findKey returns the path of the first member named key at or below
// path, in sorted member order, depth first.
func findKey(doc any, path, key string) (string, bool) {
	v, _ := lookup(doc, path)
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t[key]; ok {
			return path + "/" + value.EncodePointerSegment(key), true
		}
		for _, k := range value.Keys(t) {
			if at, ok := findKey(doc, path+"/"+value.EncodePointerSegment(k), key); ok {
				return at, true
			}
		}
	case []any:
		for i := range t {
			if at, ok := findKey(doc, path+"/"+strconv.Itoa(i), key); ok {
				return at, true
			}
		}
	}
	return "", false
}

// initial suggests the nearest state for a flow's or the workflow's
// initial.
func (e explainer) initial(source string) {
	states := e.stateNames(parentPath(source) + "/states")
	if len(states) == 0 {
		return
	}
	e.d.Hint = "states in this scope: " + strings.Join(states, ", ")
	if name, ok := lookup(e.doc, source); ok {
		if s, isString := name.(string); isString {
			if near := Nearest(s, states); near != "" {
				e.d.Reason += " (did you mean '" + near + "'?)"
			}
		}
	}
}

// unknownMember suggests the nearest allowed member for the unknown one
// source names.
func (e explainer) unknownMember(source string) {
	name := lastSegment(source)
	allowed := e.allowedAt(parentPath(source))
	if len(allowed) == 0 {
		return
	}
	if near := Nearest(name, allowed); near != "" {
		e.d.Reason += " (did you mean '" + near + "'?)"
	}
	e.d.Hint = "allowed here: " + strings.Join(allowed, ", ")
}

// strayMember finds a member of the object at source that allowed lacks
// and returns its path, naming it and its nearest allowed spelling.
func (e explainer) strayMember(source string, allowed []string) string {
	obj, _ := lookupObject(e.doc, source)
	for _, k := range value.Keys(obj) {
		if contains(allowed, k) {
			continue
		}
		e.d.Reason += ": unknown member '" + k + "'"
		if near := Nearest(k, allowed); near != "" {
			e.d.Reason += " (did you mean '" + near + "'?)"
		}
		e.d.Hint = "allowed here: " + strings.Join(allowed, ", ")
		return source + "/" + value.EncodePointerSegment(k)
	}
	return source
}

// allowedAt is the member list of the object at path, judged by where it
// sits in the document.
func (e explainer) allowedAt(path string) []string {
	if path == "" {
		return workflow.Members("workflow")
	}
	segs := strings.Split(path, "/")
	n := len(segs)
	switch {
	case n >= 2 && segs[n-1] == "flow":
		return workflow.Members("nested")
	case n >= 2 && segs[n-1] == "work":
		return workflow.Members("task")
	case n >= 3 && segs[n-2] == "states":
		obj, _ := lookupObject(e.doc, path)
		for _, form := range []string{"work", "choose", "on", "flow", "final"} {
			if _, ok := obj[form]; ok {
				return workflow.Members(form)
			}
		}
	}
	return nil
}

// stateNames lists the states of the states object at path, sorted.
func (e explainer) stateNames(path string) []string {
	obj, _ := lookupObject(e.doc, path)
	return value.Keys(obj)
}

func stateMembers() []string {
	var all []string
	for _, form := range []string{"work", "choose", "on", "flow", "final"} {
		for _, m := range workflow.Members(form) {
			if !contains(all, m) {
				all = append(all, m)
			}
		}
	}
	return all
}

// lookup returns the value at a JSON Pointer.
func lookup(doc any, path string) (any, bool) {
	if path == "" {
		return doc, true
	}
	cur := doc
	for _, raw := range strings.Split(path[1:], "/") {
		seg := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func lookupObject(doc any, path string) (map[string]any, bool) {
	v, _ := lookup(doc, path)
	obj, ok := v.(map[string]any)
	return obj, ok
}

func lastSegment(path string) string {
	raw := path[strings.LastIndexByte(path, '/')+1:]
	return strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
}

func parentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return ""
	}
	return path[:i]
}

func contains(list []string, s string) bool {
	for _, m := range list {
		if m == s {
			return true
		}
	}
	return false
}

// Text renders d as a compiler does: "FILE:LINE:COLUMN: CODE PATH: reason
// (hint)", PATH the author's path, followed by the reference's path in
// brackets when that differs.
func (d Diagnostic) Text(file string) string {
	var b strings.Builder
	b.WriteString(file)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, d.Column)
	}
	b.WriteString(": ")
	b.WriteString(d.Code)
	path := "-"
	if d.Path != nil {
		path = *d.Path
	}
	if d.SourcePath != nil {
		path = *d.SourcePath
	}
	if path == "" {
		path = "''"
	}
	b.WriteString(" " + path + ": " + d.Reason)
	if d.Hint != "" {
		b.WriteString(" (" + d.Hint + ")")
	}
	if d.SourcePath != nil && d.Path != nil {
		ref := *d.Path
		if ref == "" {
			ref = "''"
		}
		b.WriteString(" [reference path " + ref + "]")
	}
	return b.String()
}

// At is a refusal that is not the engine's (a deploy check) at the
// author's path, located in data.
func At(data []byte, code, path, reason string) Diagnostic {
	d := Diagnostic{Code: code, Path: &path, Message: code + ": " + reason + " at " + path, Reason: reason}
	if src, err := Scan(data); err == nil {
		d.Line, d.Column, _ = src.Position(path)
	}
	return d
}
