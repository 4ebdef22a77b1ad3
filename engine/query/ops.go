package query

import (
	"errors"
	"math"
	"strconv"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// arg is one compiled operator argument.
type arg struct {
	get  getter
	path string
	raw  any // the argument as written, for operators that fold a literal
	// one: the reference deems the argument statically one item
	one bool
	// matched, for a path argument of $exists and $empty: whether the
	// path selects a node, which may hold the empty marker (one.go)
	matched getter
}

// opEntry declares an operator's shape once (QUERY-FORMAT §8): unary
// operators take their value as the one operand; the others take an array
// of min..max expressions (max -1: variadic). build returns the getter;
// opPath locates the operator key (e.g. "/$idiv").
type opEntry struct {
	unary    bool
	min, max int
	schema   int // index of a JSON Schema literal argument, or -1
	raw      int // index of an argument taken verbatim, never compiled, or -1
	build    func(a []arg, opPath string) getter
	// checked, when set, replaces build for operators whose literal
	// checks belong to the reference's second phase: later queues them
	// to run once the whole document has been read (see Compile)
	checked func(a []arg, opPath string, later func(func())) getter
}

func unary(build func(a []arg, opPath string) getter) opEntry {
	return opEntry{unary: true, schema: -1, raw: -1, build: build}
}

func nary(min, max int, build func(a []arg, opPath string) getter) opEntry {
	return opEntry{min: min, max: max, schema: -1, raw: -1, build: build}
}

// withSpec is an operator of min..max arguments whose argument at raw is
// a verbatim literal; check runs in the compile phase.
func withSpec(min, max, raw int, check func(a []arg, opPath string, later func(func())) getter) opEntry {
	return opEntry{min: min, max: max, schema: -1, raw: raw, checked: check}
}

// operators is the closed vocabulary jetflow implements; filled by init
// functions of the ops_*.go files to keep each group in its own file.
var operators = map[string]opEntry{}

// constValue is a $const literal as the reference holds it: a deep copy,
// made by assignment, so without members named "__proto__".
func constValue(val any) any {
	v, _ := value.WithoutProto(val)
	return value.Clone(v)
}

// operator compiles a single-key phrase.
func (c *compiler) operator(key string, val any, path string, sc *scope, depth int) getter {
	opPath := ptr(path, key)
	switch key {
	case "$const":
		c.one = true
		return literal(constValue(val))
	case "$map":
		g := c.mapConstructor(val, opPath, sc, depth)
		c.one = true
		return g
	case "$entries":
		c.observes = true
	case "$call":
		list, ok := val.([]any)
		if !ok || len(list) < 1 {
			fail(fault.JQ0010, "'$call' requires ['name', ...argument expressions]", opPath)
		}
		name, ok := list[0].(string)
		if !ok {
			fail(fault.JQ0010, "'$call' requires ['name', ...argument expressions]", opPath)
		}
		fail(fault.JQ0010, "'$call' names no registered function '"+name+"'", opPath)
	case "$lexical":
		list, ok := val.([]any)
		if ok && len(list) == 3 {
			_, s := list[0].(string)
			_, o := list[2].(map[string]any)
			if s && o {
				fail(fault.JQ0012, "lexical provider '"+list[0].(string)+"' is not registered", opPath)
			}
		}
		fail(fault.JQ0003, "$lexical needs [provider, text expression, literal request]", opPath)
	}
	if key == "$apply" && c.apply != nil {
		g := c.applyOp(val, opPath, sc, depth)
		c.one = false
		return g
	}
	e, ok := operators[key]
	if !ok {
		if flworKeys[key] || quantKeys[key] {
			fail(fault.JQ0003, "'"+key+"' cannot form a phrase on its own", path)
		}
		failUnknown(key, path)
	}
	var args []arg
	if e.unary {
		c.lastPath = pathRef{}
		g := c.expr(val, opPath, sc, depth+1)
		args = []arg{{get: g, path: opPath, raw: val, one: c.one}}
		if _, isPath := val.(string); isPath && c.lastPath.p != nil && (key == "$exists" || key == "$empty") {
			r := c.lastPath
			args[0].matched = c.counted(r.p.matcher(r.slot, r.external, r.name, opPath), opPath)
		}
	} else {
		max := e.max
		list := requireArray(key, val, e.min, max, opPath)
		args = make([]arg, len(list))
		for i, v := range list {
			p := idx(opPath, i)
			if i == e.schema {
				fail(fault.JQ0008, "schema operators require a type-test compiler (options.compileTypeTest)", opPath)
			}
			if i == e.raw {
				v, _ := value.WithoutProto(v)
				args[i] = arg{get: nil, path: p, raw: v, one: true}
				continue
			}
			args[i] = arg{get: c.expr(v, p, sc, depth+1), path: p, raw: v}
			args[i].one = c.one
		}
	}
	if !orderAware[key] {
		for i := range args {
			if args[i].get != nil {
				args[i].get = plainOperand(args[i].get)
			}
		}
	}
	c.one = resultOne(key, args)
	if e.checked != nil {
		return e.checked(args, opPath, func(check func()) { c.late = append(c.late, check) })
	}
	return e.build(args, opPath)
}

// orderAware are the operators that read a *value.Object themselves or
// hand their operands on unchanged, so that an object built in the query
// keeps its member order through them. Every other operator (the spatial,
// series, vector and date ones read GeoJSON and rows as maps) gets its
// operands with each such object made a map.
var orderAware = setOf("$entries", "$get", "$is-object", "$is-array", "$is-null", "$is-string", "$is-number",
	"$is-boolean", "$eq", "$ne", "$count", "$seq", "$if", "$coalesce", "$default", "$head", "$tail",
	"$subsequence", "$reverse", "$distinct", "$sort", "$index-of", "$empty", "$exists", "$and", "$or", "$not",
	"$boolean", "$string", "$geo-simplify", "$from-entries", "$asof")

// plainOperand makes the objects in an operand maps, if the evaluation
// built any; inputs never hold one, so otherwise the operand passes as is.
func plainOperand(g getter) getter {
	return func(f *frame) any {
		v := g(f)
		if f.built {
			return plainItems(v)
		}
		return v
	}
}

// plainItems is value.Plain over each item of a sequence.
func plainItems(v any) any {
	m, ok := v.(*multi)
	if !ok {
		return value.Plain(v)
	}
	items := m.items()
	if out := value.PlainList(items); &out[0] != &items[0] {
		return seqOf(out)
	}
	return v
}

// ---- §8.2 sequences, §8.3 conditional, §8.4 comparisons, §8.6 logic

func init() {
	operators["$seq"] = nary(0, -1, func(a []arg, opPath string) getter {
		switch len(a) {
		case 0:
			return literal(empty)
		case 1:
			return a[0].get
		}
		return func(f *frame) any {
			var acc []any
			for _, x := range a {
				v := x.get(f)
				if x.one && isEmpty(v) {
					acc, f.marked = append(acc, v), true
					continue
				}
				acc = appendSeq(acc, v)
			}
			f.allocItems(len(acc), opPath)
			return seqOf(acc)
		}
	})
	// over a path they ask whether it selects a node, as the reference
	// does: a node holding the empty marker is one
	operators["$exists"] = unary(func(a []arg, _ string) getter {
		if m := a[0].matched; m != nil {
			return m
		}
		g := a[0].get
		return func(f *frame) any { return !isEmpty(g(f)) }
	})
	operators["$empty"] = unary(func(a []arg, _ string) getter {
		if m := a[0].matched; m != nil {
			return func(f *frame) any { return !m(f).(bool) }
		}
		g := a[0].get
		return func(f *frame) any { return isEmpty(g(f)) }
	})
	operators["$if"] = nary(2, 3, func(a []arg, _ string) getter {
		cond, then, p := a[0].get, a[1].get, a[0].path
		if len(a) == 2 {
			return func(f *frame) any {
				if ebv(cond(f), p) {
					return then(f)
				}
				return empty
			}
		}
		alt := a[2].get
		return func(f *frame) any {
			if ebv(cond(f), p) {
				return then(f)
			}
			return alt(f)
		}
	})
	// the reference's marker equals only itself (see one.go)
	operators["$eq"] = comparison(value.Equal, func(l, r bool) bool { return l && r })
	operators["$ne"] = comparison(func(x, y any) bool { return !value.Equal(x, y) }, func(l, r bool) bool { return !(l && r) })
	orders := func(bool, bool) bool { return false }
	operators["$lt"] = comparison(func(x, y any) bool { return itemLess(x, y, false) }, orders)
	operators["$le"] = comparison(func(x, y any) bool { return itemLess(x, y, true) }, orders)
	operators["$gt"] = comparison(func(x, y any) bool { return itemLess(y, x, false) }, orders)
	operators["$ge"] = comparison(func(x, y any) bool { return itemLess(y, x, true) }, orders)
	operators["$and"] = logic(false)
	operators["$or"] = logic(true)
	operators["$not"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any { return !ebv(g(f), p) }
	})
}

// comparison is an XQuery general comparison: existential over both
// operand sequences; an empty side has no witness (§8.4).
//
// When the reference deems both operands one item it compares them
// directly, so an operand that is empty there is its empty marker
// (see one.go), which marked says how to compare.
func comparison(cmp func(x, y any) bool, marked func(leftEmpty, rightEmpty bool) bool) opEntry {
	return nary(2, 2, func(a []arg, _ string) getter {
		left, right := a[0].get, a[1].get
		ones := a[0].one && a[1].one
		return func(f *frame) any {
			lv := left(f)
			if isEmpty(lv) {
				if ones {
					return marked(true, isEmpty(right(f)))
				}
				return false
			}
			rv := right(f)
			if isEmpty(rv) {
				return ones && marked(false, true)
			}
			lm, lok := lv.(*multi)
			rm, rok := rv.(*multi)
			switch {
			case !lok && !rok:
				return cmp(lv, rv)
			case lok && rok:
				for _, x := range lm.items() {
					for _, y := range rm.items() {
						if cmp(x, y) {
							return true
						}
					}
				}
			case lok:
				for _, x := range lm.items() {
					if cmp(x, rv) {
						return true
					}
				}
			default:
				for _, y := range rm.items() {
					if cmp(lv, y) {
						return true
					}
				}
			}
			return false
		}
	})
}

func logic(stopOn bool) opEntry {
	return nary(1, -1, func(a []arg, _ string) getter {
		return func(f *frame) any {
			for _, x := range a {
				if ebv(x.get(f), x.path) == stopOn {
					return stopOn
				}
			}
			return !stopOn
		}
	})
}

// ---- §8.5 arithmetic

func init() {
	operators["$add"] = arithmetic(func(x, y float64, _ string) float64 { return x + y })
	operators["$sub"] = arithmetic(func(x, y float64, _ string) float64 { return x - y })
	operators["$mul"] = arithmetic(func(x, y float64, _ string) float64 { return x * y })
	operators["$div"] = arithmetic(func(x, y float64, _ string) float64 { return x / y })
	operators["$idiv"] = arithmetic(func(x, y float64, p string) float64 {
		if y == 0 {
			throw(fault.JQ2002, "'$idiv' by zero", p)
		}
		return math.Trunc(x / y)
	})
	operators["$mod"] = arithmetic(func(x, y float64, p string) float64 {
		if y == 0 {
			throw(fault.JQ2002, "'$mod' by zero", p)
		}
		return math.Mod(x, y)
	})
	operators["$neg"] = unary(func(a []arg, _ string) getter {
		// an operand the reference deems one item is only type-checked,
		// so an empty one is refused there (see one.go)
		g, p, one := a[0].get, a[0].path, a[0].one
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) && !one {
				return empty
			}
			n, ok := v.(float64)
			if !ok {
				throw(fault.JQ2001, "arithmetic requires a number operand, got "+describe(v), p)
			}
			return -n
		}
	})
}

func arithmetic(apply func(x, y float64, opPath string) float64) opEntry {
	return nary(2, 2, func(a []arg, opPath string) getter {
		left, right, lp, rp := a[0].get, a[1].get, a[0].path, a[1].path
		// operands the reference deems one item are only type-checked,
		// so an empty one is refused there (see one.go)
		ones := a[0].one && a[1].one
		return func(f *frame) any {
			lv := left(f)
			if isEmpty(lv) && !ones {
				return empty
			}
			x, ok := lv.(float64)
			if !ok {
				throw(fault.JQ2001, "arithmetic requires a number operand, got "+describe(lv), lp)
			}
			rv := right(f)
			if isEmpty(rv) && !ones {
				return empty
			}
			y, ok := rv.(float64)
			if !ok {
				throw(fault.JQ2001, "arithmetic requires a number operand, got "+describe(rv), rp)
			}
			return apply(x, y, opPath)
		}
	})
}

// ---- §8.10 types and casts

func init() {
	isType := func(test func(v any) bool) opEntry {
		return unary(func(a []arg, _ string) getter {
			g := a[0].get
			return func(f *frame) any { return test(g(f)) }
		})
	}
	operators["$is-string"] = isType(func(v any) bool { _, ok := v.(string); return ok })
	operators["$is-number"] = isType(func(v any) bool { _, ok := v.(float64); return ok })
	operators["$is-boolean"] = isType(func(v any) bool { _, ok := v.(bool); return ok })
	operators["$is-null"] = isType(func(v any) bool { return v == nil })
	operators["$is-array"] = isType(func(v any) bool { _, ok := v.([]any); return ok })
	operators["$is-object"] = isType(value.IsObject)
	operators["$string"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			return castString(v, p)
		}
	})
	operators["$number"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			return castNumber(v, p)
		}
	})
	operators["$boolean"] = unary(func(a []arg, _ string) getter {
		g, p := a[0].get, a[0].path
		return func(f *frame) any { return ebv(g(f), p) }
	})
	coalesce := func(a []arg, _ string) getter {
		if len(a) == 1 {
			return a[0].get
		}
		return func(f *frame) any {
			for _, x := range a {
				if v := x.get(f); !isEmpty(v) {
					return v
				}
			}
			return empty
		}
	}
	operators["$coalesce"] = nary(1, -1, coalesce)
	operators["$default"] = nary(2, 2, coalesce)
	schemaOp := opEntry{min: 2, max: 2, schema: 1, raw: -1, build: nil}
	operators["$valid"] = schemaOp
	operators["$assert"] = schemaOp
}

// castString is the $string cast table (§8.10).
func castString(v any, path string) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return value.NumberString(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case nil:
		return "null"
	}
	throw(fault.JQ2001, "cannot cast "+describe(v)+" to a string", path)
	return ""
}

// castNumber is the $number cast table: strings must spell a JSON number.
func castNumber(v any, path string) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		if isJSONNumber(x) {
			n, err := strconv.ParseFloat(x, 64)
			if err == nil || isRangeErr(err) {
				return n
			}
		}
		throw(fault.JQ2001, "'"+x+"' is not a JSON number", path)
	}
	throw(fault.JQ2001, "cannot cast "+describe(v)+" to a number", path)
	return 0
}

// isRangeErr reports a number out of float64's range (strconv's
// *NumError unwraps to ErrRange).
func isRangeErr(err error) bool {
	return errors.Is(err, strconv.ErrRange)
}

// isJSONNumber matches the RFC 8259 number grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	if s[i] == '0' {
		i++
	} else if s[i] >= '1' && s[i] <= '9' {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}
