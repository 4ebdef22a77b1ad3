package query

import "strings"

// Constant constructors. An array or an object whose members are all
// literals (null, booleans, numbers, strings that are no path, '$$'
// escapes, {"$const": v}, and arrays and objects of those) builds the
// same value at every evaluation, so it is built once, at compile time,
// and shared: what an evaluation returns is never written to (a path
// already answers the input's own nodes, and $const its one clone).
//
// The account stays exact. A folded constructor charges the steps and
// bytes its members' evaluation would have charged, all at once; when
// the budget cannot cover all of it, the constructor is evaluated member
// by member instead, so that the limit fails at the node and with the
// figures it always has.

// constant is a folded constructor: its value and what building it
// charges below its own node.
type constant struct {
	val          any
	steps, bytes int
}

// constantOf folds a query document that is a literal; ok is false for
// anything else, including an object whose keys start with '$' (a
// phrase) other than a lone $const.
func constantOf(doc any) (k constant, ok bool) {
	switch x := doc.(type) {
	case nil, bool, float64:
		return constant{val: x}, true
	case string:
		switch {
		case x == "" || x[0] != '$':
			return constant{val: x}, true
		case len(x) > 1 && x[1] == '$':
			return constant{val: x[1:]}, true
		}
		return constant{}, false
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			m, ok := constantOf(e)
			if !ok {
				return constant{}, false
			}
			out[i] = m.val
			k.steps += 1 + m.steps // each member is one counted node
			k.bytes += m.bytes
		}
		// as array's f.charge(len(acc), path)
		k.bytes += sliceBytes + len(x)*itemBytes
		if len(x) > 64 {
			k.steps += len(x) / 64
		}
		k.val = out
		return k, true
	case map[string]any:
		if c, isConst := x["$const"]; isConst && len(x) == 1 {
			// the operator's literal: no node below it is counted
			return constant{val: constValue(c)}, true
		}
		out := make(map[string]any, len(x))
		for name, e := range x {
			if strings.HasPrefix(name, "$") {
				return constant{}, false
			}
			m, ok := constantOf(e)
			if !ok {
				return constant{}, false
			}
			out[name] = m.val
			k.steps += 1 + m.steps
			k.bytes += m.bytes
		}
		// as object's f.chargeObject(len(out), path)
		k.bytes += objectBytes + len(x)*memberBytes
		k.val = out
		return k, true
	}
	return constant{}, false
}

// folded returns a getter that answers doc's constant value when doc is
// a literal constructor, and build, its member-by-member evaluation,
// otherwise or when the budget cannot cover the whole charge.
func folded(doc any, build getter) getter {
	k, ok := constantOf(doc)
	if !ok {
		return build
	}
	val, steps, bytes := k.val, k.steps, k.bytes
	return func(f *frame) any {
		if f.stepsLeft < steps || f.bytesLeft < bytes {
			return build(f)
		}
		f.stepsLeft -= steps
		f.bytesLeft -= bytes
		return val
	}
}
