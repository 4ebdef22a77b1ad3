package query

import (
	"math"
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

// bindingObject returns the bindings of a $for, $let, $some or $every in
// the order they bind: as written when the document was read as written.
func (c *compiler) bindingObject(clause string, v any, path string) (map[string]any, []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		fail(fault.JQ0003, "'"+clause+"' takes an object of variable bindings", path)
	}
	if len(obj) == 0 {
		fail(fault.JQ0003, "'"+clause+"' requires at least one binding", path)
	}
	keys, _ := c.keysOf(obj, path)
	return obj, keys
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

type letBinding struct {
	slot int
	get  getter
}

// flworCompiler carries one phrase's compile-time state from clause to
// clause: each clause compiles in the scope the clauses before it left.
type flworCompiler struct {
	c     *compiler
	path  string
	d     int
	outer *scope // the phrase's enclosing scope
	sc    *scope
	seen  map[string]bool
	tuple []tupleSlot

	foldSlot int // -1 without $fold
	foldName string
	foldInit getter

	fors []forBinding
	lets []letBinding

	where     getter
	wherePath string

	groupKeys  []getter // nil without $groupby
	groupSlots []int
	groupPaths []string

	specs []orderSpec // nil without $orderby

	countSlot int // -1 without $count
	ret       getter
	retOne    bool // $return is statically one item (see one.go)

	// the late checks of each $for and $let binding (see queueLate)
	forLate, letLate [][]func()
}

// flwor compiles the FLWOR phrase (§6); clauses apply in the fixed order
// $fold → $for → $let → $as → $where → $groupby → $orderby → $count → $return.
func (c *compiler) flwor(obj map[string]any, path string, sc *scope, depth int) getter {
	fc := &flworCompiler{
		c: c, path: path, d: depth + 1, outer: sc, sc: sc,
		seen: map[string]bool{}, foldSlot: -1, countSlot: -1,
	}
	foldLate := c.segment(func() { fc.compileFold(obj) })
	fc.compileFor(obj)
	// the accumulator is in scope from $let on, not in the $for sources
	if fc.foldSlot >= 0 {
		fc.sc = &scope{fc.foldName, fc.foldSlot, fc.sc}
	}
	fc.compileLet(obj)
	fc.checkAs(obj)
	whereLate := c.segment(func() { fc.compileWhere(obj) })
	groupLate := c.segment(func() { fc.compileGroupBy(obj) })
	orderLate := c.segment(func() { fc.compileOrderBy(obj) })
	fc.compileCount(obj)
	c.late = append(c.late, c.segment(func() {
		fc.ret = c.expr(obj["$return"], path+"/$return", fc.sc, fc.d)
		fc.retOne = c.one
	})...)
	bareLet := len(obj) == 2 && has(obj, "$let")
	fc.queueLate(bareLet, orderLate, groupLate, whereLate, foldLate)
	g := fc.pipeline()
	// a bare $let phrase is as many items as its $return, any other
	// phrase a sequence
	c.one = bareLet && fc.retOne
	return g
}

// queueLate queues the clauses' late checks in the order the reference
// compiles them: after $return, a bare $let phrase its bindings in
// order; any other phrase $orderby, $groupby, $where, the $let and $for
// bindings innermost first, then the $fold accumulator.
func (fc *flworCompiler) queueLate(bareLet bool, order, group, where, fold []func()) {
	c := fc.c
	if bareLet {
		for _, l := range fc.letLate {
			c.late = append(c.late, l...)
		}
		return
	}
	c.late = append(c.late, order...)
	c.late = append(c.late, group...)
	c.late = append(c.late, where...)
	for i := len(fc.letLate) - 1; i >= 0; i-- {
		c.late = append(c.late, fc.letLate[i]...)
	}
	for i := len(fc.forLate) - 1; i >= 0; i-- {
		c.late = append(c.late, fc.forLate[i]...)
	}
	c.late = append(c.late, fold...)
}

// push brings a tuple variable into scope for the clauses after it.
func (fc *flworCompiler) push(name string, slot int, isLet bool) {
	fc.sc = &scope{name, slot, fc.sc}
	fc.tuple = append(fc.tuple, tupleSlot{name, slot, isLet})
}

// compileFold compiles the accumulator's initial value, which sees only
// the enclosing scope.
func (fc *flworCompiler) compileFold(obj map[string]any) {
	if !has(obj, "$fold") {
		return
	}
	fp := fc.path + "/$fold"
	fo, names := fc.c.bindingObject("$fold", obj["$fold"], fp)
	if len(names) != 1 {
		fail(fault.JQ0003, "'$fold' takes exactly one accumulator binding", fp)
	}
	fc.foldName = names[0]
	bp := ptr(fp, fc.foldName)
	bindName(fc.foldName, fc.seen, bp)
	fc.foldInit = fc.c.expr(fo[fc.foldName], bp, fc.outer, fc.d)
	fc.foldSlot = fc.c.bindSlot()
}

func (fc *flworCompiler) compileFor(obj map[string]any) {
	if !has(obj, "$for") {
		return
	}
	fp := fc.path + "/$for"
	fo, names := fc.c.bindingObject("$for", obj["$for"], fp)
	for _, name := range names {
		fc.forLate = append(fc.forLate, fc.c.segment(func() { fc.compileForBinding(name, fo[name], ptr(fp, name)) }))
	}
}

// compileForBinding compiles one $for binding; its source sees the
// bindings before it.
func (fc *flworCompiler) compileForBinding(name string, src any, bp string) {
	bindName(name, fc.seen, bp)
	b := forBinding{atSlot: -1}
	srcPath, atName := bp, ""
	if isExtendedBinding(src) {
		src, srcPath, atName = extendedFor(src.(map[string]any), bp, &b)
	}
	if b.window == nil && !b.allowingEmpty {
		b.rng = fc.c.rangeSource(src, srcPath, fc.sc, fc.d)
	}
	if b.rng == nil {
		b.get = fc.c.expr(src, srcPath, fc.sc, fc.d)
	}
	b.slot, b.path = fc.c.bindSlot(), srcPath
	// an item at a time, unless a window binds sequences or an empty
	// source binds the empty sequence
	fc.c.bindOne(b.slot, b.window == nil && !b.allowingEmpty)
	fc.push(name, b.slot, false)
	if atName != "" {
		bindName(atName, fc.seen, bp+"/$at")
		b.atSlot = fc.c.bindSlot()
		fc.push(atName, b.atSlot, false)
	}
	fc.fors = append(fc.fors, b)
}

// extendedFor reads the object form of a $for binding into b and returns
// its source, the source's path and the $at name ("" without $at).
func extendedFor(ext map[string]any, bp string, b *forBinding) (src any, srcPath, atName string) {
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
	return ext["$in"], bp + "/$in", atName
}

func (fc *flworCompiler) compileLet(obj map[string]any) {
	if !has(obj, "$let") {
		return
	}
	lp := fc.path + "/$let"
	lo, names := fc.c.bindingObject("$let", obj["$let"], lp)
	for _, name := range names {
		bp := ptr(lp, name)
		bindName(name, fc.seen, bp)
		if isExtendedBinding(lo[name]) {
			fail(fault.JQ0003, "the extended binding form is not available in '$let'", bp)
		}
		var g getter
		var one bool
		fc.letLate = append(fc.letLate, fc.c.segment(func() { g, one = fc.c.expr(lo[name], bp, fc.sc, fc.d), fc.c.one }))
		slot := fc.c.bindSlot()
		fc.c.bindOne(slot, one)
		fc.push(name, slot, true)
		fc.lets = append(fc.lets, letBinding{slot, g})
	}
}

// checkAs validates $as, which always fails: without a type-test compiler
// there is nothing to compile it into.
func (fc *flworCompiler) checkAs(obj map[string]any) {
	if !has(obj, "$as") {
		return
	}
	ap := fc.path + "/$as"
	ao, ok := obj["$as"].(map[string]any)
	if !ok {
		fail(fault.JQ0003, "'$as' takes an object of variable-name to schema members", ap)
	}
	if len(ao) == 0 {
		fail(fault.JQ0003, "'$as' requires at least one member", ap)
	}
	for _, name := range value.Keys(ao) {
		cp := ptr(ap, name)
		if !slices.ContainsFunc(fc.tuple, func(t tupleSlot) bool { return t.name == name }) {
			fail(fault.JQ0005, "'$as' names '"+name+"', which is not bound by this phrase's '$for'/'$let'", cp)
		}
		fail(fault.JQ0008, "schema operators require a type-test compiler (options.compileTypeTest)", cp)
	}
}

func (fc *flworCompiler) compileWhere(obj map[string]any) {
	fc.wherePath = fc.path + "/$where"
	if has(obj, "$where") {
		fc.where = fc.c.expr(obj["$where"], fc.wherePath, fc.sc, fc.d)
	}
}

// compileGroupBy compiles the grouping keys; the clauses after it see the
// key variables and every tuple variable, rebound per group.
func (fc *flworCompiler) compileGroupBy(obj map[string]any) {
	if !has(obj, "$groupby") {
		return
	}
	gp := fc.path + "/$groupby"
	gobj, names := fc.c.bindingObject("$groupby", obj["$groupby"], gp)
	for _, name := range names {
		bp := ptr(gp, name)
		bindName(name, fc.seen, bp)
		fc.groupKeys = append(fc.groupKeys, fc.c.expr(gobj[name], bp, fc.sc, fc.d))
		fc.groupSlots = append(fc.groupSlots, fc.c.bindSlot())
		fc.groupPaths = append(fc.groupPaths, bp)
	}
	// after grouping, a tuple variable holds its group's sequence
	for _, t := range fc.tuple {
		fc.c.bindOne(t.slot, false)
	}
	sc := fc.outer
	if fc.foldSlot >= 0 {
		sc = &scope{fc.foldName, fc.foldSlot, sc}
	}
	for _, t := range fc.tuple {
		sc = &scope{t.name, t.slot, sc}
	}
	for i, name := range names {
		sc = &scope{name, fc.groupSlots[i], sc}
	}
	fc.sc = sc
}

func (fc *flworCompiler) compileOrderBy(obj map[string]any) {
	if !has(obj, "$orderby") {
		return
	}
	op := fc.path + "/$orderby"
	list, ok := obj["$orderby"].([]any)
	if !ok {
		fc.specs = append(fc.specs, fc.c.orderSpec(obj["$orderby"], op, fc.sc, fc.d))
		return
	}
	if len(list) == 0 {
		fail(fault.JQ0003, "'$orderby' takes a key spec or a non-empty array of key specs", op)
	}
	for i, s := range list {
		fc.specs = append(fc.specs, fc.c.orderSpec(s, idx(op, i), fc.sc, fc.d))
	}
}

func (fc *flworCompiler) compileCount(obj map[string]any) {
	if !has(obj, "$count") {
		return
	}
	cp := fc.path + "/$count"
	name, ok := obj["$count"].(string)
	if !ok {
		fail(fault.JQ0003, "'$count' takes a variable name string", cp)
	}
	bindName(name, fc.seen, cp)
	fc.countSlot = fc.c.bindSlot()
	fc.c.bindOne(fc.countSlot, true)
	fc.sc = &scope{name, fc.countSlot, fc.sc}
}

// pipeline assembles the compiled clauses into the phrase's getter. The
// closures capture only what they run on, not the compile-time state.
func (fc *flworCompiler) pipeline() getter {
	sink := fc.sink()
	live := fc.liveSlots()
	drive := fc.drive(fc.stream(sink, live), sink, live)
	if fc.foldSlot < 0 {
		return drive
	}
	foldSlot, foldInit, seqLimit, path := fc.foldSlot, fc.foldInit, fc.c.lim.SequenceItems, fc.path
	return func(f *frame) any {
		v := foldInit(f)
		checkFold(v, seqLimit, path)
		f.slots[foldSlot] = v
		drive(f)
		return f.slots[foldSlot]
	}
}

// sink is the final stage: it collects $return items, or rebinds the
// accumulator.
func (fc *flworCompiler) sink() stage {
	ret, path, foldSlot, countSlot, retOne := fc.ret, fc.path, fc.foldSlot, fc.countSlot, fc.retOne
	seqLimit := fc.c.lim.SequenceItems
	return func(f *frame, out *collector) {
		if foldSlot >= 0 {
			v := ret(f)
			checkFold(v, seqLimit, path)
			f.slots[foldSlot] = v
		} else {
			n := len(out.items)
			v := ret(f)
			if retOne && isEmpty(v) {
				out.items, f.marked = append(out.items, v), true
			} else {
				out.items = appendSeq(out.items, v)
			}
			f.alloc((len(out.items)-n)*itemBytes, path)
			if len(out.items) > seqLimit {
				throw(fault.JQ2009, "a phrase materialized more than "+strconv.Itoa(seqLimit)+" items (limits.sequenceItems)", path)
			}
		}
		if countSlot >= 0 {
			f.slots[countSlot] = f.slots[countSlot].(float64) + 1
		}
	}
}

// liveSlots are the slots that vary per tuple at the $orderby barrier.
func (fc *flworCompiler) liveSlots() []int {
	live := make([]int, 0, len(fc.tuple)+len(fc.groupSlots))
	for _, t := range fc.tuple {
		live = append(live, t.slot)
	}
	return append(live, fc.groupSlots...)
}

// stream chains the streaming prefix $for → $let → $where in front of the
// first barrier, or of the sink when there is none.
func (fc *flworCompiler) stream(sink stage, live []int) stage {
	var emit stage
	switch {
	case fc.groupKeys != nil:
		emit = groupSink(fc.groupKeys, fc.groupPaths, fc.tuple, fc.path+"/$groupby")
	case fc.specs != nil:
		emit = rowSink(fc.specs, live, fc.path+"/$orderby")
	default:
		emit = sink
	}
	if fc.where != nil {
		emit = whereClause(fc.where, fc.wherePath, emit)
	}
	for i := len(fc.lets) - 1; i >= 0; i-- {
		emit = letClause(fc.lets[i], emit)
	}
	// a lone $for of a phrase that returns what it collects, in the
	// order it collects it, knows how many tuples it passes on at most
	// ($let and $where bind or drop, never add): it sizes the collector
	reserve := 0
	if fc.groupKeys == nil && fc.specs == nil && fc.foldSlot < 0 && len(fc.fors) == 1 {
		reserve = fc.c.lim.SequenceItems + 1
	}
	for i := len(fc.fors) - 1; i >= 0; i-- {
		emit = forClause(fc.fors[i], emit, reserve)
	}
	return emit
}

func whereClause(where getter, path string, next stage) stage {
	return func(f *frame, out *collector) {
		if ebv(where(f), path) {
			next(f, out)
		}
	}
}

func letClause(l letBinding, next stage) stage {
	return func(f *frame, out *collector) {
		f.slots[l.slot] = l.get(f)
		next(f, out)
	}
}

// drive runs the streaming prefix, then the barriers: $groupby's groups
// are formed before $orderby sorts them, and what comes out feeds the sink.
func (fc *flworCompiler) drive(head, sink stage, live []int) getter {
	countSlot, groupKeys, groupSlots, tuple := fc.countSlot, fc.groupKeys, fc.groupSlots, fc.tuple
	specs, orderPath := fc.specs, fc.path+"/$orderby"
	return func(f *frame) any {
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
				replayGroups(f, pre.order, groupSlots, tuple, sink, res)
				return seqOf(res.items)
			}
			rc := &collector{}
			replayGroups(f, pre.order, groupSlots, tuple, rowSink(specs, live, orderPath), rc)
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
}

// replayGroups rebinds each group, in the order it was first seen, and
// feeds it to next.
func replayGroups(f *frame, groups []*group, groupSlots []int, tuple []tupleSlot, next stage, out *collector) {
	for _, g := range groups {
		writeGroup(f, g, groupSlots, tuple)
		next(f, out)
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

// positiveInt reads a window's width or step: any integral number from 1,
// as Number.isInteger takes it (1e21 too). One past 2^53 acts as 2^53: no
// sequence holds that many items.
func positiveInt(v any) (int, bool) {
	n, ok := v.(float64)
	if !ok || n < 1 || n != math.Trunc(n) || math.IsInf(n, 0) {
		return 0, false
	}
	return int(min(n, maxSafeInteger)), true
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
// forClause binds each tuple in turn. With reserve, it is the only
// clause in front of the sink: it sizes the collector's items for the
// tuples it binds (each item of its source, an array's members one by
// one), at most reserve, so that a $return of one item each fills it
// without growing it; a $where that drops most tuples leaves 16 bytes of
// room for each.
func forClause(b forBinding, next stage, reserve int) stage {
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
		if reserve > 0 && cap(out.items) == 0 {
			n := 0
			for _, item := range itemsOf(v) {
				if arr, ok := item.([]any); ok {
					n += len(arr)
				} else {
					n++
				}
			}
			out.items = make([]any, 0, min(n, reserve))
		}
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
