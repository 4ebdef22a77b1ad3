package statechart

import (
	"fmt"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// effect is a compiled {run, with?} descriptor (FLOW-FORMAT's effects).
type effect struct {
	run  string
	with *query.Query
	path string
}

// Effect is a resolved effect descriptor, returned as data for the host to
// execute. HasWith is false when the descriptor has no with member or its
// query produced the empty sequence. With may share data with the call's
// context or payload, as the reference's does.
type Effect struct {
	Run     string
	With    any
	HasWith bool
}

// ToValue returns the descriptor as the reference reports it.
func (e Effect) ToValue() any {
	if !e.HasWith {
		return map[string]any{"run": e.Run}
	}
	return map[string]any{"run": e.Run, "with": e.With}
}

// Record is a fail-closed evaluation failure recorded on a result instead
// of being returned: JF2003 for a guard, JF2004 for an effect's with.
type Record struct {
	Code    fault.Code
	DocPath string
	Message string
}

// ToValue returns the record as the reference reports it.
func (r Record) ToValue() any {
	return map[string]any{"code": string(r.Code), "docPath": r.DocPath, "message": r.Message}
}

// compileEffects compiles the effects list held in member key of obj.
// An absent member is no effects; anything else must be an array.
func compileEffects(obj map[string]any, key, base string, w value.Written) ([]effect, error) {
	raw, present := obj[key]
	if !present {
		return nil, nil
	}
	path := base + "/" + key
	list, ok := raw.([]any)
	if !ok {
		return nil, fault.New(fault.JF0008, "an effects list must be an array of { run, with? } descriptors", path)
	}
	out := make([]effect, len(list))
	for i, e := range list {
		p := path + "/" + strconv.Itoa(i)
		m, ok := e.(map[string]any)
		run, _ := m["run"].(string)
		if !ok || run == "" {
			return nil, fault.New(fault.JF0008, `an effect descriptor must be an object with a non-empty string "run"`, p)
		}
		out[i] = effect{run: run, path: p}
		if with, has := m["with"]; has {
			q, err := query.Compile(with, query.Options{Written: w.Under(p + "/with")})
			if err != nil {
				return nil, fault.Wrap(fault.JF0009,
					fmt.Sprintf(`effect '%s' has a "with" that failed to compile: %s`, run, err.Error()), p+"/with", err)
			}
			out[i].with = q
		}
	}
	return out, nil
}

// resolve appends the resolved descriptor, or records JF2004 and omits the
// effect when its with fails.
func (e *effect) resolve(sc *scope, out *Result) {
	if e.with == nil {
		out.Effects = append(out.Effects, Effect{Run: e.run})
		return
	}
	v, ok, err := e.with.Within(sc.r.budget).Eval(sc.value(), nil)
	if err != nil {
		out.Errors = append(out.Errors, Record{
			Code:    fault.JF2004,
			DocPath: e.path + "/with",
			Message: fmt.Sprintf(`effect '%s' was omitted: its "with" threw while evaluating: %s`, e.run, err.Error()),
		})
		return
	}
	out.Effects = append(out.Effects, Effect{Run: e.run, With: v, HasWith: ok})
}
