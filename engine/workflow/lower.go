package workflow

import (
	"errors"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// MaxNesting is the deepest chain of nested flows a workflow may declare.
const MaxNesting = 64

// The members each form accepts, in no particular order.
var (
	allowedMembers = map[Kind][]string{
		KindWork:   {"work", "input", "then", "catch", "limit"},
		KindChoose: {"choose", "otherwise", "limit"},
		KindOn:     {"on", "after", "limit"},
		KindFlow:   {"flow", "then", "limit"},
		KindFinal:  {"final", "limit"},
	}
	forms         = []Kind{KindWork, KindChoose, KindOn, KindFlow, KindFinal}
	topMembers    = []string{"$workflow", "revision", "initial", "states"}
	nestedMembers = []string{"initial", "states"}
	taskMembers   = []string{"task", "version", "with"}
	choiceMembers = []string{"guard", "to"}
	waitMembers   = []string{"event", "to", "guard"}
	delayMembers  = []string{"ms", "to"}
)

// Members returns the members the format allows where, one of "workflow",
// "nested" (a flow's body), "task" (work.task), "choice", "wait",
// "delay", or a state form ("work", "choose", "on", "flow", "final");
// nil for anything else. The caller owns the slice.
func Members(where string) []string {
	var list []string
	switch where {
	case "workflow":
		list = topMembers
	case "nested":
		list = nestedMembers
	case "task":
		list = taskMembers
	case "choice":
		list = choiceMembers
	case "wait":
		list = waitMembers
	case "delay":
		list = delayMembers
	default:
		list = allowedMembers[Kind(where)]
	}
	return append([]string(nil), list...)
}

func fail(reason, path string) error { return fault.New(fault.JF0021, reason, path) }

// Lower lowers a jaren-workflow 0.2 document onto a jaren-fsm 0.2
// statechart and one jaren-dag document per work state, as the
// reference's lowerWorkflow does, validating the document, proving every
// automatic cycle bounded (JF0022) and compiling the statechart. doc is a
// JSON value (what encoding/json decodes into any); it is copied, never
// modified.
func Lower(doc any) (*Lowered, error) {
	norm, err := normalizeDocument(doc)
	if err != nil {
		return nil, fault.Wrap(fault.JF0021, "workflow must be JSON", "", err)
	}
	root, ok := norm.(map[string]any)
	if !ok || root["$workflow"] != "0.2" || !nonblank(root["revision"]) {
		return nil, fail(`a workflow requires "$workflow": "0.2" and a nonblank revision`, "")
	}
	if k, bad := unknownKey(root, topMembers); bad {
		return nil, fail("unknown workflow member", "/"+k)
	}
	lw := &lowerer{
		dags:    map[string]map[string]any{},
		sources: map[string]string{},
		specs:   map[string]*Spec{},
		links:   map[string][]string{},
		bounded: map[string]bool{},
	}
	initial, err := lw.scope(root, "", "", "", 0)
	if err != nil {
		return nil, err
	}
	if err := lw.prove(); err != nil {
		return nil, err
	}
	fsm := map[string]any{"$fsm": "0.2", "initial": initial, "states": lw.states, "transitions": lw.transitions}
	chart, err := compileChart(fsm)
	if err != nil {
		return nil, lw.locate(err)
	}
	return &Lowered{
		Version:  Lowering,
		Revision: root["revision"].(string),
		Document: root,
		FSM:      fsm,
		DAGs:     lw.dags,
		Sources:  lw.sources,
		Specs:    lw.specs,
		States:   lw.order,
		Work:     lw.work,
		Initial:  initial,
		chart:    chart,
	}, nil
}

// lowerer accumulates the lowered statechart in the order the reference
// pushes states and transitions: a nested scope's states before its flow
// state, transitions as each state is visited.
type lowerer struct {
	states      []any
	transitions []any
	dags        map[string]map[string]any
	sources     map[string]string
	specs       map[string]*Spec
	order       []string
	work        []string
	// links are the automatically traversable edges the cycle proof walks.
	links   map[string][]string
	bounded map[string]bool
	// origins holds, per transition, the author's path of the member it
	// came from (a choice or wait branch, then, catch, otherwise, after).
	origins []string
}

// scopeRefs resolves state names local to one states object.
type scopeRefs struct {
	prefix string
	states map[string]any
}

// id resolves a target; member is the author's path of the member that
// names it, which the error carries as its source.
func (s scopeRefs) id(name any, present bool, member string) (string, error) {
	n, ok := name.(string)
	if ok {
		_, ok = s.states[n]
	}
	if !present || !ok {
		return "", fault.New(fault.JF0021, "undeclared state '"+jsString(name, present)+"' in this scope", s.prefix+"/states").WithSource(member)
	}
	return s.prefix + "/states/" + value.EncodePointerSegment(n), nil
}

// scope lowers one {initial,states} body and returns its initial state's
// id. parent is the enclosing flow state ("" at the top level) and
// continuation the state its finals complete into ("" when none).
func (lw *lowerer) scope(body any, prefix, parent, continuation string, depth int) (string, error) {
	if depth > MaxNesting {
		return "", fail("nested workflow depth exceeds 64", prefix)
	}
	obj, ok := body.(map[string]any)
	var states map[string]any
	if ok {
		states, ok = obj["states"].(map[string]any)
	}
	if !ok || len(states) == 0 {
		return "", fail("states must be a non-empty object", prefix+"/states")
	}
	if parent != "" {
		if k, bad := unknownKey(obj, nestedMembers); bad {
			return "", fail("unknown nested flow member", prefix+"/"+k)
		}
	}
	refs := scopeRefs{prefix: prefix, states: states}
	initialName, ok := obj["initial"].(string)
	if ok {
		_, ok = states[initialName]
	}
	if !ok {
		return "", fail("initial must name a state in this scope", prefix+"/initial")
	}
	for _, name := range value.Keys(states) {
		if err := lw.state(refs, name, states[name], parent, continuation, depth); err != nil {
			return "", err
		}
	}
	return refs.id(initialName, true, prefix+"/initial")
}

// state validates and lowers one declaration, in the reference's order of
// checks: form, members, limit, then the form's own members and targets.
func (lw *lowerer) state(refs scopeRefs, name string, decl any, parent, continuation string, depth int) error {
	id, _ := refs.id(name, true, "")
	spec, ok := decl.(map[string]any)
	if name == "" || !ok {
		return fail("a state needs a non-empty id and an object declaration", id)
	}
	var kind Kind
	count := 0
	for _, f := range forms {
		if has(spec, string(f)) {
			kind = f
			count++
		}
	}
	if count != 1 || (kind == KindFinal && spec["final"] != true) {
		return fail("a state declares exactly one of work, choose, on, flow or final:true", id)
	}
	if k, bad := unknownKey(spec, allowedMembers[kind]); bad {
		return fail("unexpected '"+k+"' on "+string(kind)+" state", id+"/"+k)
	}
	s := &Spec{ID: id, Kind: kind, Parent: parent}
	if limit, has := spec["limit"]; has {
		n, ok := safeInteger(limit)
		if !ok || n < 1 {
			return fail("limit must be a positive safe integer", id+"/limit")
		}
		s.Limit = n
		lw.bounded[id] = true
	}
	raw := make(map[string]any, len(spec)+1)
	for k, v := range spec {
		raw[k] = v
	}
	raw["kind"] = string(kind)
	s.raw = raw
	lw.specs[id] = s
	lw.sources[id] = id
	lw.order = append(lw.order, id)
	lw.links[id] = nil

	st := map[string]any{"id": id}
	if parent != "" {
		st["parent"] = parent
	}
	e := edges{lw: lw, refs: refs, from: id}
	var err error
	switch kind {
	case KindWork:
		err = lw.lowerWork(s, spec, e)
	case KindChoose:
		err = lowerChoose(s, spec, e)
	case KindOn:
		err = lowerOn(s, spec, e)
	case KindFlow:
		// The continuation resolves before the nested scope, so an
		// undeclared then is reported before any nested defect.
		if s.Then, err = refs.id(spec["then"], has(spec, "then"), id+"/then"); err != nil {
			return err
		}
		if s.Initial, err = lw.scope(spec["flow"], id+"/flow", id, s.Then, depth+1); err != nil {
			return err
		}
		st["initial"] = s.Initial
		lw.links[id] = append(lw.links[id], s.Initial)
		lw.transitions = append(lw.transitions, map[string]any{"from": id, "to": s.Then, "done": true})
		lw.origins = append(lw.origins, id+"/then")
	case KindFinal:
		st["final"] = true
		if continuation != "" {
			lw.links[id] = append(lw.links[id], continuation)
		}
	}
	if err != nil {
		return err
	}
	lw.states = append(lw.states, st)
	return nil
}

// edges adds transitions from one state.
type edges struct {
	lw   *lowerer
	refs scopeRefs
	from string
}

// add resolves a target and appends the transition {from,to,...fields};
// automatic edges also join the cycle proof. origin is the author's path
// of the member holding the transition (a branch, or then, catch, …) and
// member that of the target name.
func (e edges) add(to any, present bool, fields map[string]any, auto bool, origin, member string) (string, error) {
	target, err := e.refs.id(to, present, member)
	if err != nil {
		return "", err
	}
	fields["from"] = e.from
	fields["to"] = target
	e.lw.transitions = append(e.lw.transitions, fields)
	e.lw.origins = append(e.lw.origins, origin)
	if auto {
		e.lw.links[e.from] = append(e.lw.links[e.from], target)
	}
	return target, nil
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// unknownKey returns the first member of m, in JavaScript order, that is
// not in allowed. Sorting is needed only to pick which unknown member to
// report, so the common case skips it.
func unknownKey(m map[string]any, allowed []string) (string, bool) {
	clean := true
	for k := range m {
		if !member(allowed, k) {
			clean = false
			break
		}
	}
	if clean {
		return "", false
	}
	for _, k := range value.Keys(m) {
		if !member(allowed, k) {
			return k, true
		}
	}
	return "", false
}

func member(list []string, k string) bool {
	for _, m := range list {
		if m == k {
			return true
		}
	}
	return false
}

// locate gives a statechart error at /transitions/N/… the author's path of
// the member that transition came from, so a guard error names its branch.
func (lw *lowerer) locate(err error) error {
	var fe *fault.Error
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, "/transitions/") {
		return err
	}
	rest := fe.Path[len("/transitions/"):]
	idx, tail, _ := strings.Cut(rest, "/")
	n, convErr := strconv.Atoi(idx)
	if convErr != nil || n < 0 || n >= len(lw.origins) {
		return err
	}
	origin := lw.origins[n]
	if tail != "" && strings.HasPrefix(tail, "guard") {
		origin += "/" + tail
	}
	fe.Source, fe.HasSource = origin, true
	return err
}
