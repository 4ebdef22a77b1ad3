package query

// The reference's empty marker. The reference compiler gives every
// expression a static cardinality and trusts an expression it deems one
// item: an array constructor, a $seq of two or more operands and a
// FLWOR $return take such an expression's value as an item without
// asking whether it is empty. A few operators are deemed one item when
// their first operand is, yet answer empty when a later operand is
// ($date-add, $date-sub and $date-diff with an empty amount or second
// date, $geo-simplify with an empty tolerance), and operators that pass
// an empty first operand on ($string, $head, …) carry that along. The
// reference's internal empty marker then becomes an item, which JSON
// writes as null: [{"$date-diff": ["2026-01-01", "$.missing", "day"]}]
// is [null]. jetflow mirrors the observable result: an expression the
// reference deems one item that evaluates to the empty sequence is a
// null item in those three places, and a $seq or phrase whose only item
// is such a null is the empty sequence, as the reference's sequence of
// one marker is the marker itself.

// oneItem makes an expression deemed one item contribute a null item
// where it evaluates to the empty sequence.
func oneItem(g getter) getter {
	return func(f *frame) any {
		v := g(f)
		if isEmpty(v) {
			return nil
		}
		return v
	}
}

// mayBeEmpty reports whether an expression deemed one item can still
// evaluate to the empty sequence: an operator or a variable can, a
// literal or constructor cannot.
func mayBeEmpty(doc any) bool {
	switch x := doc.(type) {
	case string:
		return len(x) > 1 && x[0] == '$' && x[1] != '$'
	case map[string]any:
		for k := range x {
			return len(k) > 0 && k[0] == '$' && k != "$map" && k != "$const"
		}
	}
	return false
}

// markedSeq is seqOf over items of which marks stand for the marker: a
// lone marker is the empty sequence.
func markedSeq(items []any, marks int) any {
	if marks == 1 && len(items) == 1 {
		return empty
	}
	return seqOf(items)
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
