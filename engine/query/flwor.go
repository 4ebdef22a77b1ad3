package query

import (
	"slices"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// stage is one clause of the FLWOR tuple stream: it receives the frame
// (the tuple is the current state of the binding slots) and a collector.
type stage func(f *frame, out *collector)

// collector gathers what the streaming prefix produces: returned items,
// or rows for a barrier ($groupby / $orderby).
type collector struct {
	items  []any
	rows   []row
	groups map[string]*group
	order  []*group
}

type row struct {
	keys []any
	snap []any
}

type group struct {
	keys []any
	accs [][]any
}

type forBinding struct {
	slot, atSlot  int
	get           getter
	rng           *rangeSrc
	allowingEmpty bool
	window        *window
	path          string // of the source, for the account of its windows
}

type window struct {
	sliding    bool
	size, step int
}

type orderSpec struct {
	key           getter
	desc, emptyGt bool
	path          string
}

// bindName enforces the variable-name rule and the per-phrase duplicate
// rule (JQ0007).
func bindName(name string, seen map[string]bool, path string) {
	if !varNameRE.MatchString(name) {
		fail(fault.JQ0003, "'"+name+"' is not a valid variable name", path)
	}
	if seen[name] {
		fail(fault.JQ0007, "duplicate binding of variable '"+name+"' within one phrase", path)
	}
	seen[name] = true
}

func bindingObject(clause string, v any, path string) (map[string]any, []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		fail(fault.JQ0003, "'"+clause+"' takes an object of variable bindings", path)
	}
	if len(obj) == 0 {
		fail(fault.JQ0003, "'"+clause+"' requires at least one binding", path)
	}
	return obj, value.Keys(obj)
}

var forBindingKeys = []string{"$in", "$at", "$allowing-empty", "$window", "$size", "$step"}

func isExtendedBinding(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range forBindingKeys {
		if has(obj, k) {
			return true
		}
	}
	return false
}

type tupleSlot struct {
	name  string
	slot  int
	isLet bool
}

// flwor compiles the FLWOR phrase (§6); clauses apply in the fixed order
// $fold → $for → $let → $as → $where → $groupby → $orderby → $count → $return.
func (c *compiler) flwor(obj map[string]any, path string, sc *scope, depth int) getter {
	seen := map[string]bool{}
	var tuple []tupleSlot
	var fors []forBinding
	d := depth + 1
	outer := sc

	foldSlot := -1
	var foldInit getter
	var foldName string
	if has(obj, "$fold") {
		fp := path + "/$fold"
		fo, names := bindingObject("$fold", obj["$fold"], fp)
		if len(names) != 1 {
			fail(fault.JQ0003, "'$fold' takes exactly one accumulator binding", fp)
		}
		foldName = names[0]
		bp := ptr(fp, foldName)
		bindName(foldName, seen, bp)
		foldInit = c.expr(fo[foldName], bp, outer, d)
		foldSlot = c.bindSlot()
	}
	if has(obj, "$for") {
		fp := path + "/$for"
		fo, names := bindingObject("$for", obj["$for"], fp)
		for _, name := range names {
			bp := ptr(fp, name)
			bindName(name, seen, bp)
			src, srcPath := fo[name], bp
			b := forBinding{atSlot: -1}
			atName := ""
			if isExtendedBinding(src) {
				ext := src.(map[string]any)
				for _, k := range value.Keys(ext) {
					if !slices.Contains(forBindingKeys, k) {
						fail(fault.JQ0003, "'"+k+"' is not a valid key of an extended '$for' binding", bp)
					}
				}
				if !has(ext, "$in") {
					fail(fault.JQ0003, "an extended '$for' binding requires '$in'", bp)
				}
				if at, ok := ext["$at"]; ok {
					s, ok := at.(string)
					if !ok || !varNameRE.MatchString(s) {
						fail(fault.JQ0003, "'$at' takes a variable name string", bp+"/$at")
					}
					atName = s
				}
				if ae, ok := ext["$allowing-empty"]; ok {
					bv, ok := ae.(bool)
					if !ok {
						fail(fault.JQ0003, "'$allowing-empty' takes a boolean", bp+"/$allowing-empty")
					}
					b.allowingEmpty = bv
				}
				if has(ext, "$window") {
					b.window = windowSpec(ext, bp)
				} else if has(ext, "$size") || has(ext, "$step") {
					fail(fault.JQ0003, "'$size'/'$step' require '$window'", bp)
				}
				src, srcPath = ext["$in"], bp+"/$in"
			}
			if b.window == nil && !b.allowingEmpty {
				b.rng = c.rangeSource(src, srcPath, sc, d)
			}
			if b.rng == nil {
				b.get = c.expr(src, srcPath, sc, d)
			}
			b.slot, b.path = c.bindSlot(), srcPath
			sc = &scope{name, b.slot, sc}
			tuple = append(tuple, tupleSlot{name, b.slot, false})
			if atName != "" {
				bindName(atName, seen, bp+"/$at")
				b.atSlot = c.bindSlot()
				sc = &scope{atName, b.atSlot, sc}
				tuple = append(tuple, tupleSlot{atName, b.atSlot, false})
			}
			fors = append(fors, b)
		}
	}
	if foldSlot >= 0 {
		sc = &scope{foldName, foldSlot, sc}
	}
	type letBinding struct {
		slot int
		get  getter
	}
	var lets []letBinding
	if has(obj, "$let") {
		lp := path + "/$let"
		lo, names := bindingObject("$let", obj["$let"], lp)
		for _, name := range names {
			bp := ptr(lp, name)
			bindName(name, seen, bp)
			if isExtendedBinding(lo[name]) {
				fail(fault.JQ0003, "the extended binding form is not available in '$let'", bp)
			}
			g := c.expr(lo[name], bp, sc, d)
			slot := c.bindSlot()
			sc = &scope{name, slot, sc}
			tuple = append(tuple, tupleSlot{name, slot, true})
			lets = append(lets, letBinding{slot, g})
		}
	}
	if has(obj, "$as") {
		ap := path + "/$as"
		ao, ok := obj["$as"].(map[string]any)
		if !ok {
			fail(fault.JQ0003, "'$as' takes an object of variable-name to schema members", ap)
		}
		if len(ao) == 0 {
			fail(fault.JQ0003, "'$as' requires at least one member", ap)
		}
		for _, name := range value.Keys(ao) {
			cp := ptr(ap, name)
			if !slices.ContainsFunc(tuple, func(t tupleSlot) bool { return t.name == name }) {
				fail(fault.JQ0005, "'$as' names '"+name+"', which is not bound by this phrase's '$for'/'$let'", cp)
			}
			fail(fault.JQ0008, "schema operators require a type-test compiler (options.compileTypeTest)", cp)
		}
	}
	var where getter
	wherePath := path + "/$where"
	if has(obj, "$where") {
		where = c.expr(obj["$where"], wherePath, sc, d)
	}
	var groupKeys []getter
	var groupSlots []int
	var groupPaths []string
	if has(obj, "$groupby") {
		gp := path + "/$groupby"
		gobj, names := bindingObject("$groupby", obj["$groupby"], gp)
		for _, name := range names {
			bp := ptr(gp, name)
			bindName(name, seen, bp)
			groupKeys = append(groupKeys, c.expr(gobj[name], bp, sc, d))
			groupSlots = append(groupSlots, c.bindSlot())
			groupPaths = append(groupPaths, bp)
		}
		sc = outer
		if foldSlot >= 0 {
			sc = &scope{foldName, foldSlot, sc}
		}
		for _, t := range tuple {
			sc = &scope{t.name, t.slot, sc}
		}
		for i, name := range names {
			sc = &scope{name, groupSlots[i], sc}
		}
	}
	var specs []orderSpec
	if has(obj, "$orderby") {
		op := path + "/$orderby"
		if list, ok := obj["$orderby"].([]any); ok {
			if len(list) == 0 {
				fail(fault.JQ0003, "'$orderby' takes a key spec or a non-empty array of key specs", op)
			}
			for i, s := range list {
				specs = append(specs, c.orderSpec(s, idx(op, i), sc, d))
			}
		} else {
			specs = append(specs, c.orderSpec(obj["$orderby"], op, sc, d))
		}
	}
	countSlot := -1
	if has(obj, "$count") {
		cp := path + "/$count"
		name, ok := obj["$count"].(string)
		if !ok {
			fail(fault.JQ0003, "'$count' takes a variable name string", cp)
		}
		bindName(name, seen, cp)
		countSlot = c.bindSlot()
		sc = &scope{name, countSlot, sc}
	}
	ret := c.expr(obj["$return"], path+"/$return", sc, d)

	// the final sink: collect $return items, or rebind the accumulator
	seqLimit := c.lim.SequenceItems
	sink := func(f *frame, out *collector) {
		if foldSlot >= 0 {
			v := ret(f)
			checkFold(v, seqLimit, path)
			f.slots[foldSlot] = v
		} else {
			n := len(out.items)
			out.items = appendSeq(out.items, ret(f))
			f.alloc((len(out.items)-n)*itemBytes, path)
			if len(out.items) > seqLimit {
				throw(fault.JQ2009, "a phrase materialized more than "+strconv.Itoa(seqLimit)+" items (limits.sequenceItems)", path)
			}
		}
		if countSlot >= 0 {
			f.slots[countSlot] = f.slots[countSlot].(float64) + 1
		}
	}

	// slots that vary per tuple at the $orderby barrier
	live := make([]int, 0, len(tuple)+len(groupSlots))
	for _, t := range tuple {
		live = append(live, t.slot)
	}
	live = append(live, groupSlots...)

	// the streaming prefix: $for → $let → $where, feeding the first barrier
	var emit stage
	switch {
	case groupKeys != nil:
		emit = groupSink(groupKeys, groupPaths, tuple, path+"/$groupby")
	case specs != nil:
		emit = rowSink(specs, live, path+"/$orderby")
	default:
		emit = sink
	}
	if where != nil {
		next := emit
		emit = func(f *frame, out *collector) {
			if ebv(where(f), wherePath) {
				next(f, out)
			}
		}
	}
	for i := len(lets) - 1; i >= 0; i-- {
		l, next := lets[i], emit
		emit = func(f *frame, out *collector) {
			f.slots[l.slot] = l.get(f)
			next(f, out)
		}
	}
	for i := len(fors) - 1; i >= 0; i-- {
		emit = forClause(fors[i], emit)
	}
	head := emit

	drive := func(f *frame) any {
		if countSlot >= 0 {
			f.slots[countSlot] = 0.0
		}
		pre := &collector{}
		head(f, pre)
		if groupKeys == nil && specs == nil {
			return seqOf(pre.items)
		}
		rows := pre.rows
		if groupKeys != nil {
			if specs == nil {
				res := &collector{}
				for _, g := range pre.order {
					writeGroup(f, g, groupSlots, tuple)
					sink(f, res)
				}
				return seqOf(res.items)
			}
			rc := &collector{}
			rs := rowSink(specs, live, path+"/$orderby")
			for _, g := range pre.order {
				writeGroup(f, g, groupSlots, tuple)
				rs(f, rc)
			}
			rows = rc.rows
		}
		sortRows(rows, specs)
		res := &collector{}
		for _, r := range rows {
			for j, s := range live {
				f.slots[s] = r.snap[j]
			}
			sink(f, res)
		}
		return seqOf(res.items)
	}
	if foldSlot < 0 {
		return drive
	}
	return func(f *frame) any {
		v := foldInit(f)
		checkFold(v, seqLimit, path)
		f.slots[foldSlot] = v
		drive(f)
		return f.slots[foldSlot]
	}
}

func checkFold(v any, limit int, path string) {
	if seqLen(v) > limit {
		throw(fault.JQ2009, "a fold accumulator exceeded "+strconv.Itoa(limit)+" items (limits.sequenceItems)", path)
	}
}

// writeGroup rebinds a group: key variables to the group's key values,
// every other tuple variable to the sequence of its values (§6.5).
func writeGroup(f *frame, g *group, groupSlots []int, tuple []tupleSlot) {
	for i, s := range groupSlots {
		f.slots[s] = g.keys[i]
	}
	for j, t := range tuple {
		f.slots[t.slot] = seqOf(g.accs[j])
	}
}

func windowSpec(ext map[string]any, bp string) *window {
	kind := ext["$window"]
	if kind != "tumbling" && kind != "sliding" {
		fail(fault.JQ0003, "'$window' must be 'tumbling' or 'sliding'", bp+"/$window")
	}
	if !has(ext, "$size") {
		fail(fault.JQ0003, "a '$window' binding requires '$size'", bp)
	}
	size, ok := positiveInt(ext["$size"])
	if !ok {
		fail(fault.JQ0003, "'$size' must be a positive integer", bp+"/$size")
	}
	w := &window{sliding: kind == "sliding", size: size, step: size}
	if w.sliding {
		w.step = 1
	}
	if st, ok := ext["$step"]; ok {
		step, ok := positiveInt(st)
		if !ok {
			fail(fault.JQ0003, "'$step' must be a positive integer", bp+"/$step")
		}
		w.step = step
	}
	return w
}

func positiveInt(v any) (int, bool) {
	n, ok := v.(float64)
	if !ok || n < 1 || n != float64(int64(n)) || n > maxSafeInteger {
		return 0, false
	}
	return int(n), true
}

var orderSpecKeys = []string{"$key", "$dir", "$empty", "$collation"}

func (c *compiler) orderSpec(s any, sp string, sc *scope, depth int) orderSpec {
	spec := orderSpec{path: sp}
	key, keyPath := s, sp
	if obj, ok := s.(map[string]any); ok && (has(obj, "$key") || has(obj, "$dir") || has(obj, "$empty") || has(obj, "$collation")) {
		for _, k := range value.Keys(obj) {
			if !slices.Contains(orderSpecKeys, k) {
				fail(fault.JQ0003, "'"+k+"' is not a valid key of an $orderby key spec", sp)
			}
		}
		if !has(obj, "$key") {
			fail(fault.JQ0003, "an explicit $orderby key spec requires '$key'", sp)
		}
		if d, ok := obj["$dir"]; ok {
			if d != "asc" && d != "desc" {
				fail(fault.JQ0003, "'$dir' must be 'asc' or 'desc'", sp+"/$dir")
			}
			spec.desc = d == "desc"
		}
		if e, ok := obj["$empty"]; ok {
			if e != "least" && e != "greatest" {
				fail(fault.JQ0003, "'$empty' must be 'least' or 'greatest'", sp+"/$empty")
			}
			spec.emptyGt = e == "greatest"
		}
		if col, ok := obj["$collation"]; ok {
			name, ok := col.(string)
			if !ok {
				fail(fault.JQ0003, "'$collation' must be a registered collation name", sp+"/$collation")
			}
			fail(fault.JQ0010, "'$collation' names no registered collation '"+name+"'", sp+"/$collation")
		}
		key, keyPath = obj["$key"], sp+"/$key"
	}
	spec.key = c.expr(key, keyPath, sc, depth)
	return spec
}

// forClause iterates a $for source with D4 array unpacking.
func forClause(b forBinding, next stage) stage {
	if b.window != nil {
		return windowClause(b, next)
	}
	if b.rng != nil {
		return func(f *frame, out *collector) {
			lo, hi, ok := b.rng.bounds(f)
			pos := 0.0
			for i := lo; ok && i <= hi; i++ {
				f.slots[b.slot] = i
				if b.atSlot >= 0 {
					f.slots[b.atSlot] = pos
				}
				pos++
				next(f, out)
			}
		}
	}
	return func(f *frame, out *collector) {
		v := b.get(f)
		pos := 0
		emit := func(item any) {
			f.slots[b.slot] = item
			if b.atSlot >= 0 {
				f.slots[b.atSlot] = float64(pos)
			}
			pos++
			next(f, out)
		}
		for _, item := range itemsOf(v) {
			if arr, ok := item.([]any); ok {
				for _, e := range arr {
					emit(e)
				}
				continue
			}
			emit(item)
		}
		if pos == 0 && b.allowingEmpty {
			f.slots[b.slot] = empty
			if b.atSlot >= 0 {
				f.slots[b.atSlot] = -1.0
			}
			next(f, out)
		}
	}
}

func unpacked(v any) []any {
	var out []any
	for _, item := range itemsOf(v) {
		if arr, ok := item.([]any); ok {
			out = append(out, arr...)
			continue
		}
		out = append(out, item)
	}
	return out
}

func windowClause(b forBinding, next stage) stage {
	w := b.window
	return func(f *frame, out *collector) {
		items := unpacked(b.get(f))
		f.allocItems(len(items), b.path)
		n := 0
		for start := 0; start < len(items); start += w.step {
			end := start + w.size
			if end > len(items) {
				if w.sliding {
					break
				}
				end = len(items)
			}
			f.allocItems(end-start, b.path)
			f.slots[b.slot] = seqOf(slices.Clone(items[start:end]))
			if b.atSlot >= 0 {
				f.slots[b.atSlot] = float64(n)
			}
			n++
			next(f, out)
		}
		if n == 0 && b.allowingEmpty {
			f.slots[b.slot] = empty
			if b.atSlot >= 0 {
				f.slots[b.atSlot] = -1.0
			}
			next(f, out)
		}
	}
}

// groupSink collects tuples into groups keyed by the grouping relation.
func groupSink(keys []getter, paths []string, tuple []tupleSlot, path string) stage {
	return func(f *frame, out *collector) {
		f.allocItems(len(keys)+len(tuple), path)
		vals := make([]any, len(keys))
		var b strings.Builder
		for i, k := range keys {
			v := k(f)
			if m, ok := v.(*multi); ok {
				throw(fault.JQ2001, "a $groupby key must be the empty sequence or a single item, got "+describe(m), paths[i])
			}
			vals[i] = v
			b.WriteByte(0)
			if isEmpty(v) {
				b.WriteByte('~')
			} else {
				stableKey(&b, v)
			}
		}
		f.alloc(b.Len(), path)
		if out.groups == nil {
			out.groups = map[string]*group{}
		}
		g, ok := out.groups[b.String()]
		if !ok {
			g = &group{keys: vals, accs: make([][]any, len(tuple))}
			out.groups[b.String()] = g
			out.order = append(out.order, g)
		}
		for j, t := range tuple {
			g.accs[j] = appendSeq(g.accs[j], f.slots[t.slot])
		}
	}
}

// rowSink evaluates the sort keys of a tuple and snapshots its live
// bindings (a Schwartzian row).
func rowSink(specs []orderSpec, live []int, path string) stage {
	return func(f *frame, out *collector) {
		f.allocItems(len(specs)+len(live), path)
		keys := make([]any, len(specs))
		for i, s := range specs {
			v := s.key(f)
			switch v.(type) {
			case emptySeq, float64, string:
			default:
				throw(fault.JQ2005, "an $orderby key must be the empty sequence, a number, or a string, got "+describe(v), s.path)
			}
			keys[i] = v
		}
		snap := make([]any, len(live))
		for j, s := range live {
			snap[j] = f.slots[s]
		}
		out.rows = append(out.rows, row{keys, snap})
	}
}

// sortRows is a stable sort by the key specs (§6.6).
func sortRows(rows []row, specs []orderSpec) {
	slices.SortStableFunc(rows, func(a, b row) int {
		for i, s := range specs {
			x, y := a.keys[i], b.keys[i]
			var c int
			_, xe := x.(emptySeq)
			_, ye := y.(emptySeq)
			switch {
			case xe && ye:
				continue
			case xe:
				c = -1
				if s.emptyGt {
					c = 1
				}
			case ye:
				c = 1
				if s.emptyGt {
					c = -1
				}
			default:
				switch xv := x.(type) {
				case float64:
					yv, ok := y.(float64)
					if !ok {
						throw(fault.JQ2005, "cannot order a number against a string in $orderby", s.path)
					}
					c = compareNumberKeys(xv, yv)
				case string:
					yv, ok := y.(string)
					if !ok {
						throw(fault.JQ2005, "cannot order a string against a number in $orderby", s.path)
					}
					c = compareCodePoints(xv, yv)
				}
			}
			if c != 0 {
				if s.desc {
					return -c
				}
				return c
			}
		}
		return 0
	})
}
