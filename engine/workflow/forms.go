package workflow

import (
	"strconv"

	"github.com/jetflow/jetflow/engine/value"
)

// workPointer is a state's work member as a JSON Pointer step, the
// prefix of every path inside it.
const workPointer = "/work"

// lowerWork lowers a work state to a DAG document and its completion and
// catch transitions.
func (lw *lowerer) lowerWork(s *Spec, spec map[string]any, e edges) error {
	id := s.ID
	work, ok := spec["work"].(map[string]any)
	if !ok || has(work, "task") == has(work, "dag") {
		return fail("work must declare either task or dag", id+workPointer)
	}
	var dag map[string]any
	if has(work, "task") {
		if !nonblank(work["task"]) || !nonblank(work["version"]) {
			return fail("a task needs a nonblank task name and version", id+workPointer)
		}
		if k, bad := unknownKey(work, taskMembers); bad {
			return fail("unknown task member", id+workPointer+"/"+k)
		}
		dag = taskDAG(work)
	} else {
		inline, ok := work["dag"].(map[string]any)
		if len(work) != 1 || !ok {
			return fail("work.dag must be a DAG document", id+workPointer+"/dag")
		}
		dag = value.Clone(inline).(map[string]any)
		checkpointOutputs(dag["nodes"])
	}
	lw.dags[id] = dag
	lw.work = append(lw.work, id)
	var err error
	if s.Then, err = e.add(spec["then"], has(spec, "then"), map[string]any{"event": EventDone}, true, id+"/then", id+"/then"); err != nil {
		return err
	}
	if c, present := spec["catch"]; present {
		if s.Catch, err = e.add(c, true, map[string]any{"event": EventError}, true, id+"/catch", id+"/catch"); err != nil {
			return err
		}
	}
	s.Input = DefaultInput
	if in, present := spec["input"]; present && in != nil {
		s.Input = in
	}
	return nil
}

// taskDAG is the shorthand's region: input, then the versioned task, then
// the output, both checkpointed.
func taskDAG(work map[string]any) map[string]any {
	task := map[string]any{"kind": "task", "run": work["task"], "version": work["version"], "checkpoint": true}
	if with, present := work["with"]; present {
		task["with"] = with
	}
	return map[string]any{
		"$dag": "0.1",
		"nodes": map[string]any{
			"input":  map[string]any{"kind": "input"},
			"task":   task,
			"output": map[string]any{"kind": "output", "checkpoint": true},
		},
		"edges": []any{
			map[string]any{"from": "input", "to": "task"},
			map[string]any{"from": "task", "to": "output"},
		},
	}
}

// checkpointOutputs marks every output node of an inline DAG as a
// checkpoint: a completed region is a serialization boundary. Like the
// reference's Object.values(dag.nodes ?? {}), it also reaches into a
// malformed array of nodes, which compiling the DAG then refuses.
func checkpointOutputs(nodes any) {
	var list []any
	switch t := nodes.(type) {
	case map[string]any:
		for _, n := range t {
			list = append(list, n)
		}
	case []any:
		list = t
	}
	for _, n := range list {
		if node, ok := n.(map[string]any); ok && node["kind"] == "output" {
			node["checkpoint"] = true
		}
	}
}

// lowerChoose lowers guarded branches and the fallback, all on the
// internal next event.
func lowerChoose(s *Spec, spec map[string]any, e edges) error {
	id := s.ID
	branches, ok := spec["choose"].([]any)
	if !ok || len(branches) == 0 {
		return fail("choose needs at least one guarded branch", id+"/choose")
	}
	for i, b := range branches {
		branch, ok := b.(map[string]any)
		if ok {
			_, bad := unknownKey(branch, choiceMembers)
			ok = has(branch, "guard") && !bad
		}
		if !ok {
			return fail("a choice is {guard,to}", id+"/choose/"+strconv.Itoa(i))
		}
		at := id + "/choose/" + strconv.Itoa(i)
		to, err := e.add(branch["to"], has(branch, "to"), map[string]any{"event": EventNext, "guard": branch["guard"]}, true, at, at+"/to")
		if err != nil {
			return err
		}
		s.Choose = append(s.Choose, Choice{Guard: branch["guard"], To: to})
	}
	var err error
	s.Otherwise, err = e.add(spec["otherwise"], has(spec, "otherwise"), map[string]any{"event": EventNext}, true, id+"/otherwise", id+"/otherwise")
	return err
}

// lowerOn lowers a wait: external event branches, which do not advance by
// themselves, and an optional timer, which does.
func lowerOn(s *Spec, spec map[string]any, e edges) error {
	id := s.ID
	branches, ok := spec["on"].([]any)
	after, hasAfter := spec["after"]
	if !ok || (len(branches) == 0 && !hasAfter) {
		return fail("a wait needs events or a delay", id+"/on")
	}
	for i, b := range branches {
		branch, ok := b.(map[string]any)
		if ok {
			_, bad := unknownKey(branch, waitMembers)
			ok = nonblank(branch["event"]) && !bad
		}
		if !ok {
			return fail("a wait branch is {event,to,guard?}", id+"/on/"+strconv.Itoa(i))
		}
		event := branch["event"].(string)
		fields := map[string]any{"event": EventPrefix + event}
		guard, hasGuard := branch["guard"]
		if hasGuard {
			fields["guard"] = guard
		}
		at := id + "/on/" + strconv.Itoa(i)
		to, err := e.add(branch["to"], has(branch, "to"), fields, false, at, at+"/to")
		if err != nil {
			return err
		}
		s.On = append(s.On, Wait{Event: event, Guard: guard, HasGuard: hasGuard, To: to})
	}
	if !hasAfter {
		return nil
	}
	delay, ok := after.(map[string]any)
	var ms float64
	if ok {
		var fin bool
		ms, fin = finite(delay["ms"])
		_, bad := unknownKey(delay, delayMembers)
		ok = fin && ms >= 0 && !bad
	}
	if !ok {
		return fail("after is {ms,to} with a nonnegative finite duration", id+"/after")
	}
	to, err := e.add(delay["to"], has(delay, "to"), map[string]any{"after": ms}, true, id+"/after", id+"/after/to")
	if err != nil {
		return err
	}
	s.After = &Delay{Ms: ms, To: to}
	return nil
}
