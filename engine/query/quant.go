package query

import "github.com/jetflow/jetflow/engine/fault"

// quantifier compiles {$some|$every, $satisfies} (§7).
func (c *compiler) quantifier(obj map[string]any, path string, sc *scope, depth int) getter {
	some := has(obj, "$some")
	clause := "$every"
	if some {
		clause = "$some"
	}
	cp := path + "/" + clause
	bo, names := c.bindingObject(clause, obj[clause], cp)
	seen := map[string]bool{}
	type qb struct {
		slot int
		get  getter
		rng  *rangeSrc
	}
	var binds []qb
	var lates [][]func()
	for _, name := range names {
		bp := ptr(cp, name)
		bindName(name, seen, bp)
		if isExtendedBinding(bo[name]) {
			fail(fault.JQ0003, "the extended binding form is not available in quantifiers", bp)
		}
		var b qb
		lates = append(lates, c.segment(func() {
			b.rng = c.rangeSource(bo[name], bp, sc, depth+1)
			if b.rng == nil {
				b.get = c.expr(bo[name], bp, sc, depth+1)
			}
		}))
		b.slot = c.bindSlot()
		c.bindOne(b.slot, true)
		sc = &scope{name, b.slot, sc}
		binds = append(binds, b)
	}
	satPath := path + "/$satisfies"
	sat := c.expr(obj["$satisfies"], satPath, sc, depth+1)
	c.one = true // a boolean
	// the reference compiles the test before the bindings, innermost first
	for i := len(lates) - 1; i >= 0; i-- {
		c.late = append(c.late, lates[i]...)
	}
	test := func(f *frame) bool { return ebv(sat(f), satPath) }
	for i := len(binds) - 1; i >= 0; i-- {
		b, next := binds[i], test
		if b.rng != nil {
			test = func(f *frame) bool {
				lo, hi, ok := b.rng.bounds(f)
				for i := lo; ok && i <= hi; i++ {
					f.slots[b.slot] = i
					if next(f) == some {
						return some
					}
				}
				return !some
			}
			continue
		}
		test = func(f *frame) bool {
			for _, item := range itemsOf(b.get(f)) {
				if arr, ok := item.([]any); ok {
					for _, e := range arr {
						f.slots[b.slot] = e
						if next(f) == some {
							return some
						}
					}
					continue
				}
				f.slots[b.slot] = item
				if next(f) == some {
					return some
				}
			}
			return !some
		}
	}
	return func(f *frame) any { return test(f) }
}

// rangeSrc is a $for or quantifier source that is statically a $range:
// it is iterated by counting, never materialized (§8.9), so only
// limits.steps bounds it.
type rangeSrc struct {
	from, to         getter
	fromPath, toPath string
}

func (c *compiler) rangeSource(src any, path string, sc *scope, depth int) *rangeSrc {
	obj, ok := src.(map[string]any)
	if !ok || len(obj) != 1 {
		return nil
	}
	list, ok := obj["$range"].([]any)
	if !ok || len(list) != 2 {
		return nil
	}
	if depth > c.maxDepth {
		c.maxDepth, c.deepPath = depth, path
	}
	op := path + "/$range"
	return &rangeSrc{
		from: c.expr(list[0], op+"/0", sc, depth+1), to: c.expr(list[1], op+"/1", sc, depth+1),
		fromPath: op + "/0", toPath: op + "/1",
	}
}

func (r *rangeSrc) bounds(f *frame) (lo, hi float64, ok bool) {
	a := r.from(f)
	b := r.to(f)
	if isEmpty(a) || isEmpty(b) {
		return 0, 0, false
	}
	return rangeBound(a, r.fromPath), rangeBound(b, r.toPath), true
}
