package query

import (
	"maps"

	"github.com/jetflow/jetflow/engine/value"
)

// The reference's empty marker. The reference compiler gives every
// expression a static cardinality and trusts an expression it deems one
// item: an array constructor, a $seq of two or more operands, a FLWOR
// $return, an object member and a $map pair take such an expression's
// value as an item without asking whether it is empty. A few operators
// are deemed one item when their first operand is, yet answer empty
// when a later operand is ($date-add, $date-sub and $date-diff with an
// empty amount or second date, $geo-simplify with an empty tolerance),
// and operators that pass an empty first operand on ($string, $head, …)
// carry that along. The reference's empty sequence, a JavaScript symbol,
// then becomes an array element, a sequence item or an object member.
//
// jetflow holds it the same way: the empty sequence value (value.Empty)
// stands as the element, item or member. Read back through a path or an
// operand it is the empty sequence again; value.Equal finds it equal to
// itself only, so an array holding it is not [null]; $count counts it
// as an item of a sequence, and a sequence whose only item is the marker
// is the marker itself, that is the empty sequence. At the query's
// boundary (unmark) it becomes what the reference's JSON text shows:
// null as an array element or a sequence item, and a member holding it
// is left out, as JSON.stringify drops a symbol-valued property.

// oneElement makes an array element deemed one item contribute the
// marker as an element where it evaluates to the empty sequence.
func oneElement(g getter) getter {
	return func(f *frame) any {
		v := g(f)
		if isEmpty(v) {
			f.marked = true
			return loneMarker
		}
		return v
	}
}

// loneMarker is the sequence of one item, the marker: appended by the
// array constructor as one element. It is read by that constructor only
// (seqLen, appendSeq), never handed on, so its odd shape (a *multi of
// one item) does not escape.
var loneMarker = &multi{xs: []any{empty}}

// mayBeEmpty reports whether an expression deemed one item can still
// evaluate to the empty sequence: an operator or a variable can, a
// literal or constructor cannot. So can $ itself: a JSLT rule
// dispatched on the marker (a member of its input that holds it, an
// item $apply hands on) has it as $, which the reference's constructors
// then hold as they hold any value deemed one item.
func mayBeEmpty(doc any) bool {
	switch x := doc.(type) {
	case string:
		return len(x) > 0 && x[0] == '$' && (len(x) == 1 || x[1] != '$')
	case map[string]any:
		for k := range x {
			return len(k) > 0 && k[0] == '$' && k != "$map" && k != "$const"
		}
	}
	return false
}

// unmark is the boundary of an evaluation that held the marker: a
// result item that is the marker, or an array element, becomes null,
// and an object member holding it is left out, as the reference's JSON
// text shows them. What holds no marker is returned as it is.
func unmark(v any) any {
	m, ok := v.(*multi)
	if !ok {
		if isEmpty(v) {
			return v
		}
		y, _ := unmarked(v)
		return y
	}
	if out, changed := unmarkedList(m.items()); changed {
		return seqOf(out)
	}
	return v
}

// Unmark makes a value that EvalMarked left holding the empty marker
// JSON, as the reference's JSON text shows it: an array element holding
// it is null, a member holding it is left out. A value holding none is
// returned as it is.
func Unmark(v any) any {
	y, _ := unmarked(v)
	return y
}

// UnmarkList is Unmark of each item of xs, copied only when one of them
// changes.
func UnmarkList(xs []any) []any {
	out, _ := unmarkedList(xs)
	return out
}

// unmarked is unmark for one item, the marker being null; changed is
// false when v holds no marker (y is then v).
func unmarked(v any) (y any, changed bool) {
	switch x := v.(type) {
	case emptySeq:
		return nil, true
	case []any:
		return unmarkedList(x)
	case map[string]any:
		// the copy is the same whatever order the members are visited in
		var out map[string]any
		for k, e := range x {
			y, ch := unmarked(e)
			if !ch {
				continue
			}
			if out == nil {
				out = maps.Clone(x)
			}
			if isEmpty(e) {
				delete(out, k)
			} else {
				out[k] = y
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case *value.Object:
		vals := make([]any, x.Len())
		changed := false
		for i := range vals {
			_, e := x.At(i)
			y, ch := unmarked(e)
			vals[i], changed = y, changed || ch
		}
		if !changed {
			return v, false
		}
		out := value.NewObject(x.Len())
		for i, y := range vals {
			k, e := x.At(i)
			if !isEmpty(e) {
				out.Set(k, y)
			}
		}
		return out, true
	}
	return v, false
}

// unmarkedList is unmarked over the items of a list, copied only when
// one of them changes.
func unmarkedList(xs []any) ([]any, bool) {
	var out []any
	for i, e := range xs {
		y, ch := unmarked(e)
		if ch && out == nil {
			out = append(make([]any, 0, len(xs)), xs[:i]...)
		}
		if out != nil {
			out = append(out, y)
		}
	}
	if out == nil {
		return xs, false
	}
	return out, true
}

// bindOne records whether the variable in slot is bound to one item.
func (c *compiler) bindOne(slot int, one bool) {
	if !one {
		delete(c.oneSlots, slot)
		return
	}
	if c.oneSlots == nil {
		c.oneSlots = map[int]bool{}
	}
	c.oneSlots[slot] = true
}

// resultOne is the reference's static cardinality of an operator's
// result: whether it deems it one item, given whether it deems each
// operand one (a verbatim operand counts as one). Operators missing from
// the tables are deemed to answer any number of items.
func resultOne(op string, args []arg) bool {
	switch {
	case alwaysOne[op]:
		return true
	case oneWithFirst[op]:
		return len(args) > 0 && args[0].one
	case oneWithAll[op]:
		for _, a := range args {
			if !a.one {
				return false
			}
		}
		return true
	}
	switch op {
	case "$if":
		return len(args) == 3 && args[1].one && args[2].one
	case "$coalesce", "$default":
		for _, a := range args {
			if a.one {
				return true
			}
		}
	case "$seq":
		return len(args) == 1 && args[0].one
	}
	return false
}

var (
	alwaysOne = setOf("$exists", "$empty", "$eq", "$ne", "$lt", "$le", "$gt", "$ge", "$and", "$or", "$not",
		"$concat", "$string-join", "$substring", "$contains", "$starts-with", "$ends-with", "$upper", "$lower",
		"$string-length", "$normalize-space", "$match", "$search", "$replace", "$count", "$sum", "$from-entries",
		"$is-string", "$is-number", "$is-boolean", "$is-null", "$is-array", "$is-object", "$boolean", "$valid",
		"$is-date", "$is-time", "$is-datetime", "$is-duration", "$within", "$bbox-intersects")
	oneWithFirst = setOf("$neg", "$avg", "$min", "$max", "$head", "$string", "$number", "$geo-simplify",
		"$date-add", "$date-sub", "$start-of", "$end-of", "$date-diff", "$date-format", "$week", "$week-year",
		"$quarter", "$weekday", "$year", "$month", "$day", "$hours", "$minutes", "$seconds", "$epoch",
		"$datetime", "$distinct", "$reverse", "$sort", "$assert")
	oneWithAll = setOf("$add", "$sub", "$mul", "$div", "$idiv", "$mod", "$overlaps", "$time-bucket")
)
