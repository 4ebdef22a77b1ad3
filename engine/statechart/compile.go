package statechart

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// decl is a state declaration during compilation, in declaration order.
type decl struct {
	id         string
	path       string
	kind       kind
	parent     string
	hasParent  bool
	initial    string
	hasInitial bool
	history    string
	entry      []effect
	exit       []effect
	children   []int // declaration indices
	rank       int
}

var (
	chartMembers      = []string{"$fsm", "initial", "states", "transitions"}
	stateMembers      = []string{"id", "parent", "initial", "type", "history", "final", "entry", "exit"}
	transitionMembers = []string{"from", "to", "event", "after", "done", "always", "type", "guard", "effects"}
)

// keysOf is obj's keys in the order the document writes them (w, from
// value.DecodeWritten, by the object's pointer), else in Keys order.
func keysOf(obj map[string]any, w value.Written, path string) []string {
	keys, _ := w.KeysOf(obj, path)
	return keys
}

func member(list []string, k string) bool {
	for _, m := range list {
		if m == k {
			return true
		}
	}
	return false
}

// defect is the reference's JF0020 compile error. Paths append raw member
// names, as the reference does.
func defect(reason, path string) error { return fault.New(fault.JF0020, reason, path) }

// Compile compiles a jaren-fsm 0.2 document with the default options.
func Compile(doc any) (*Chart, error) { return CompileWith(doc, Options{}) }

// CompileWith compiles a jaren-fsm 0.2 document. Errors are *fault.Error
// with the reference's code (JF0020, or JF0007/JF0008/JF0009 for guards
// and effects), reason and document path.
func CompileWith(doc any, opts Options) (*Chart, error) {
	maxSteps := opts.MaxMicrosteps
	if maxSteps == 0 {
		maxSteps = 1000
	}
	if maxSteps < 0 || maxSteps > maxSafe {
		return nil, errors.New("statechart: MaxMicrosteps must be a positive safe integer")
	}
	m, ok := doc.(map[string]any)
	if !ok || m["$fsm"] != "0.2" {
		return nil, defect(`a statechart requires "$fsm": "0.2"`, "/$fsm")
	}
	for _, k := range keysOf(m, opts.Written, "") {
		if !member(chartMembers, k) {
			return nil, defect("unknown statechart member", "/"+k)
		}
	}
	list, ok := m["states"].([]any)
	if !ok || len(list) == 0 {
		return nil, defect("states must be a non-empty array", "/states")
	}
	decls, byID, err := declareStates(list, opts.Written)
	if err != nil {
		return nil, err
	}
	if err := linkStates(decls, byID); err != nil {
		return nil, err
	}
	c := &Chart{maxMicrosteps: maxSteps}
	c.buildTree(decls, byID)
	init, _ := m["initial"].(string)
	r, ok := byID[init]
	if !ok || decls[r].hasParent || decls[r].kind == kindHistory {
		return nil, defect("initial must name an ordinary root state", "/initial")
	}
	c.initial = decls[r].rank
	tlist, ok := m["transitions"].([]any)
	if !ok {
		return nil, defect("transitions must be an array", "/transitions")
	}
	c.transitions = make([]transition, len(tlist))
	for i, t := range tlist {
		if err := c.compileTransition(i, t, opts.Written); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// declareStates checks each declaration on its own, in declaration order.
func declareStates(list []any, w value.Written) ([]*decl, map[string]int, error) {
	decls := make([]*decl, 0, len(list))
	byID := make(map[string]int, len(list))
	for i, raw := range list {
		path := "/states/" + strconv.Itoa(i)
		var s map[string]any
		switch x := raw.(type) {
		case string:
			s = map[string]any{"id": x}
		case map[string]any:
			s = x
		}
		id, _ := s["id"].(string)
		if s == nil || id == "" {
			return nil, nil, defect("a state needs a non-empty string id", path)
		}
		for _, k := range keysOf(s, w, path) {
			if !member(stateMembers, k) {
				return nil, nil, defect("unknown state member", path+"/"+k)
			}
		}
		if _, dup := byID[id]; dup {
			return nil, nil, defect(fmt.Sprintf("duplicate state '%s'", id), path)
		}
		d := &decl{id: id, path: path}
		var pv, iv, tv, hv, fv any
		pv, d.hasParent = s["parent"]
		d.parent, _ = pv.(string)
		if d.hasParent && d.parent == "" {
			return nil, nil, defect("parent must be a state id", path+"/parent")
		}
		iv, d.hasInitial = s["initial"]
		init, isString := iv.(string)
		if d.hasInitial && !isString {
			return nil, nil, defect("initial must be a state id", path+"/initial")
		}
		d.initial = init
		tv, hasType := s["type"]
		if hasType {
			name, _ := tv.(string)
			if d.kind = kindOf(name); d.kind == kindUnset {
				return nil, nil, defect("unknown state type", path+"/type")
			}
		}
		hv, hasHistory := s["history"]
		d.history, _ = hv.(string)
		if hasHistory && d.history != "shallow" && d.history != "deep" {
			return nil, nil, defect("history must be shallow or deep", path+"/history")
		}
		fv, hasFinal := s["final"]
		final, isBool := fv.(bool)
		if hasFinal && !isBool {
			return nil, nil, defect("final must be boolean", path+"/final")
		}
		if !hasType {
			if hasHistory {
				d.kind = kindHistory
			} else if final {
				d.kind = kindFinal
			}
		}
		if (final && d.kind != kindFinal) || (hasHistory && d.kind != kindHistory) {
			return nil, nil, defect("conflicting state types", path)
		}
		var err error
		if d.entry, err = compileEffects(s, "entry", path, w); err != nil {
			return nil, nil, err
		}
		if d.exit, err = compileEffects(s, "exit", path, w); err != nil {
			return nil, nil, err
		}
		byID[id] = len(decls)
		decls = append(decls, d)
	}
	return decls, byID, nil
}

// linkStates builds the parent relation, refuses cycles, infers compound
// and atomic types and checks each state's shape.
func linkStates(decls []*decl, byID map[string]int) error {
	// seen stamps the states of the current walk; acyclic marks states whose
	// whole ancestor chain is known to end, so the checks stay linear.
	seen := make([]int, len(decls))
	acyclic := make([]bool, len(decls))
	for i, d := range decls {
		if d.hasParent {
			p, ok := byID[d.parent]
			if !ok {
				return defect("parent is undeclared", d.path+"/parent")
			}
			decls[p].children = append(decls[p].children, i)
		}
		seen[i] = i + 1
		for up, has := d.parent, d.hasParent; has; {
			p, ok := byID[up]
			if !ok || acyclic[p] {
				break
			}
			if seen[p] == i+1 {
				return defect("state hierarchy has a cycle", d.path+"/parent")
			}
			seen[p] = i + 1
			up, has = decls[p].parent, decls[p].hasParent
		}
		for j := i; !acyclic[j]; {
			acyclic[j] = true
			p, ok := byID[decls[j].parent]
			if !decls[j].hasParent || !ok {
				break
			}
			j = p
		}
	}
	for _, d := range decls {
		ordinary := 0
		initialOK := false
		for _, ch := range d.children {
			if decls[ch].kind == kindHistory {
				continue
			}
			ordinary++
			if d.hasInitial && decls[ch].id == d.initial {
				initialOK = true
			}
		}
		if d.kind == kindUnset {
			d.kind = kindAtomic
			if ordinary > 0 {
				d.kind = kindCompound
			}
		}
		switch {
		case (d.kind == kindAtomic || d.kind == kindFinal || d.kind == kindHistory) && len(d.children) > 0:
			return defect(d.kind.String()+" states cannot have children", d.path)
		case d.kind == kindCompound && !initialOK:
			return defect("a compound state needs an initial naming an immediate ordinary child", d.path+"/initial")
		case d.kind == kindParallel && ordinary == 0:
			return defect("a parallel state needs regions", d.path)
		case d.kind != kindCompound && d.hasInitial:
			return defect("only compound states have initial", d.path+"/initial")
		case d.kind == kindHistory && (!d.hasParent || d.history == "" || len(d.entry) > 0 || len(d.exit) > 0):
			return defect("history needs a parent and a mode, and cannot carry effects", d.path)
		}
	}
	return nil
}

// buildTree lays the declarations out in tree order.
func (c *Chart) buildTree(decls []*decl, byID map[string]int) {
	order := make([]int, 0, len(decls))
	var visit func(i int)
	visit = func(i int) {
		decls[i].rank = len(order)
		order = append(order, i)
		for _, ch := range decls[i].children {
			visit(ch)
		}
	}
	for i, d := range decls {
		if !d.hasParent {
			visit(i)
		}
	}
	c.nodes = make([]node, len(order))
	c.ids = make(map[string]int, len(order))
	c.states = make([]string, len(order))
	for r, i := range order {
		d := decls[i]
		n := &c.nodes[r]
		n.id, n.kind, n.entry, n.exit, n.parent = d.id, d.kind, d.entry, d.exit, -1
		n.deep = d.history == "deep"
		if d.hasParent {
			n.parent = decls[byID[d.parent]].rank
		} else {
			c.roots = append(c.roots, r)
		}
		for _, ch := range d.children {
			cr := decls[ch].rank
			n.children = append(n.children, cr)
			if decls[ch].kind != kindHistory {
				n.ordinary = append(n.ordinary, cr)
			} else {
				c.hasHistory = true
			}
			if d.hasInitial && decls[ch].id == d.initial && decls[ch].kind != kindHistory {
				n.initial = cr
			}
		}
		c.ids[d.id] = r
		c.states[r] = d.id
	}
	// Preorder ranks make each subtree contiguous; its end is found bottom-up.
	for r := len(c.nodes) - 1; r >= 0; r-- {
		n := &c.nodes[r]
		n.end = r
		if len(n.children) > 0 {
			n.end = c.nodes[n.children[len(n.children)-1]].end
		}
	}
}

// compileTransition compiles transition i and lists it on its source.
func (c *Chart) compileTransition(i int, raw any, w value.Written) error {
	path := "/transitions/" + strconv.Itoa(i)
	t, from, to, err := c.transitionEnds(raw, path, w)
	if err != nil {
		return err
	}
	ct := transition{index: i, from: from, to: to, trigger: trigWildcard, domain: -1}
	if err := c.compileTrigger(&ct, t, path); err != nil {
		return err
	}
	internal, err := c.isInternal(t, from, to, path)
	if err != nil {
		return err
	}
	ct.guardPath = path + "/guard"
	if ct.guard, err = compileGuard(t["guard"], ct.guardPath, w); err != nil {
		return err
	}
	ct.domain = c.domain(from, to, internal)
	if ct.effects, err = compileEffects(t, "effects", path, w); err != nil {
		return err
	}
	c.transitions[i] = ct
	c.nodes[from].out = append(c.nodes[from].out, i)
	return nil
}

// transitionEnds checks a transition's shape and members and resolves its
// source and target ranks.
func (c *Chart) transitionEnds(raw any, path string, w value.Written) (t map[string]any, from, to int, err error) {
	t, isObject := raw.(map[string]any)
	fromID, fromOK := t["from"].(string)
	toID, toOK := t["to"].(string)
	from, fromOK2 := c.ids[fromID]
	to, toOK2 := c.ids[toID]
	if !isObject || !fromOK || !toOK || !fromOK2 || !toOK2 {
		return nil, 0, 0, defect("transition from/to must name declared states", path)
	}
	for _, k := range keysOf(t, w, path) {
		if !member(transitionMembers, k) {
			return nil, 0, 0, defect("unknown transition member", path+"/"+k)
		}
	}
	if k := c.nodes[from].kind; k == kindHistory || k == kindFinal {
		return nil, 0, 0, defect("history and final states cannot have outgoing transitions", path+"/from")
	}
	return t, from, to, nil
}

// compileTrigger reads a transition's trigger into ct; with none it stays
// trigWildcard. Each member is checked before the trigger count, so a
// malformed member is reported as itself.
func (c *Chart) compileTrigger(ct *transition, t map[string]any, path string) error {
	ev, hasEvent := t["event"]
	if name, ok := ev.(string); ok {
		ct.trigger, ct.event = trigEvent, name
	} else if hasEvent && ev != nil {
		return defect("event must be a string or null", path+"/event")
	}
	av, hasAfter := t["after"]
	if hasAfter {
		f, err := afterDelay(av, path)
		if err != nil {
			return err
		}
		ct.trigger, ct.after = trigAfter, f
	}
	hasDone, err := trueFlag(t, "done", path)
	if err != nil {
		return err
	}
	hasAlways, err := trueFlag(t, "always", path)
	if err != nil {
		return err
	}
	if countTrue(hasEvent, hasAfter, hasDone, hasAlways) > 1 {
		return defect("a transition has exactly one trigger", path)
	}
	if hasDone {
		if k := c.nodes[ct.from].kind; k != kindCompound && k != kindParallel {
			return defect("done requires a compound or parallel source", path+"/done")
		}
		ct.trigger = trigDone
	}
	if hasAlways {
		ct.trigger = trigAlways
	}
	return nil
}

func afterDelay(av any, path string) (float64, error) {
	f, ok := av.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, defect("after must be a finite nonnegative millisecond duration", path+"/after")
	}
	return f + 0, nil // +0 folds -0 into 0
}

// trueFlag reads a member that is either absent or true.
func trueFlag(t map[string]any, key, path string) (bool, error) {
	v, ok := t[key]
	if ok && v != true {
		return false, defect(key+" must be true when present", path+"/"+key)
	}
	return ok, nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// isInternal reads the transition type; an internal transition must stay
// within its source.
func (c *Chart) isInternal(t map[string]any, from, to int, path string) (bool, error) {
	internal := false
	if tv := t["type"]; tv != nil {
		switch tv {
		case "internal":
			internal = true
		case "external":
		default:
			return false, defect("internal transitions must target their source or a descendant", path+"/type")
		}
	}
	if internal && !c.within(to, from) {
		return false, defect("internal transitions must target their source or a descendant", path+"/type")
	}
	return internal, nil
}

// compileGuard compiles a guard query; a null or absent guard is none.
func compileGuard(gv any, path string, w value.Written) (*query.Query, error) {
	if gv == nil {
		return nil, nil
	}
	q, err := query.Compile(gv, query.Options{Written: w.Under(path)})
	if err != nil {
		return nil, fault.Wrap(fault.JF0007, "statechart guard failed to compile", path, err)
	}
	return q, nil
}

// domain is the rank of a transition's domain: its source when internal,
// else the nearest non-parallel proper ancestor of the source that holds
// the target, or -1 for the virtual root.
func (c *Chart) domain(from, to int, internal bool) int {
	if internal {
		return from
	}
	for p := c.nodes[from].parent; p >= 0; p = c.nodes[p].parent {
		if c.nodes[p].kind != kindParallel && c.below(to, p) {
			return p
		}
	}
	return -1
}
