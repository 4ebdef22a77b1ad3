package query

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/jetflow/jetflow/engine/value"
)

// The series kernels of QUERY-FORMAT §8.16, written after the
// reference's (@jarenjs/core/src/series/): the same loops, the same
// order of additions, so that a mean or an interpolated fill agrees to
// the last digit.

// rowSelector says where a row keeps one member: a bare name, read the
// way JavaScript reads row[name], or a singular path.
type rowSelector struct {
	name string
	path *jsonPath // nil for a bare name
}

// read returns the member and whether the row has it.
func (s *rowSelector) read(row any) (any, bool) {
	if s.path != nil {
		return s.path.walk(row)
	}
	switch x := row.(type) {
	case map[string]any:
		v, ok := x[s.name]
		if !ok && objectPrototype[s.name] {
			// what every plain object inherits: one value for all rows,
			// neither an instant nor a reading
			return inherited(s.name), true
		}
		return v, ok
	case []any:
		// an array is an object to the reference: it has a length and
		// members named by its indexes
		if s.name == "length" {
			return float64(len(x)), true
		}
		if i, err := strconv.Atoi(s.name); err == nil && i >= 0 && i < len(x) && strconv.Itoa(i) == s.name {
			return x[i], true
		}
	}
	return nil, false
}

// objectPrototype are the members a JavaScript object inherits, which a
// bare-name selector reads as the reference does.
var objectPrototype = setOf("constructor", "__proto__", "__defineGetter__", "__defineSetter__",
	"__lookupGetter__", "__lookupSetter__", "hasOwnProperty", "isPrototypeOf",
	"propertyIsEnumerable", "toLocaleString", "toString", "valueOf")

// inherited stands for an inherited member; as a group key it is the
// same for every row.
type inherited string

var (
	atMember    = &rowSelector{name: "at"}
	valueMember = &rowSelector{name: "value"}
)

// sample is one canonical row; null marks a measured gap.
type sample struct {
	at    float64
	value float64
	null  bool
	canon bool // the row is an object whose own at and value these are
	row   int  // the source row's index
}

// canonicalSamples reads every row's instant and reading, refusing a row
// that is not a sample, and sorts them stably by instant.
// The slice is borrowed from scratch, which keeps it for the next
// evaluation when the kernel is done (scratch.release).
func canonicalSamples(f *frame, sc *scratch, rows []any, at, val *rowSelector, path string) []sample {
	f.charge(len(rows), path)
	out := sc.samples(len(rows))
	sorted := true
	// a row read through the bare names at and value is already what
	// canonicalRow answers when its at is a number
	bare := at.path == nil && at.name == "at" && val.path == nil && val.name == "value"
	for i, row := range rows {
		_, isObj := row.(map[string]any)
		if _, isArr := row.([]any); !isObj && !isArr {
			refuseSeries("row " + strconv.Itoa(i) + " is not an object")
		}
		v, ok := at.read(row)
		if ms, isNum := v.(float64); isNum && !math.IsInf(ms, 0) && ms == ms {
			out[i].at, out[i].canon = ms, bare && isObj
		} else {
			out[i].at = epochAt(v, ok, i)
		}
		r, ok := val.read(row)
		switch x := r.(type) {
		case nil:
			out[i].null = true
		case float64:
			if !math.IsInf(x, 0) && x == x {
				out[i].value = x
				break
			}
			ok = false
		default:
			ok = false
		}
		if !ok {
			refuseSeries("row " + strconv.Itoa(i) + ", value: neither a finite number nor null")
		}
		out[i].row = i
		if i > 0 && out[i-1].at > out[i].at {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(out, func(a, b sample) int { return cmp.Compare(a.at, b.at) })
	}
	return out
}

// scratch lends the sample slices of one kernel run; release clears and
// keeps them for the next run, which saves the largest allocation of a
// series evaluation (the samples hold no answer: what a kernel answers is
// copied out of them).
type scratch struct {
	bufs [2][]sample
	used int
	all  asofGroup // the ungrouped $asof's one group
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func borrowScratch() *scratch { return scratchPool.Get().(*scratch) }

func (sc *scratch) samples(n int) []sample {
	b := &sc.bufs[sc.used]
	sc.used++
	if cap(*b) < n {
		*b = make([]sample, n)
	}
	out := (*b)[:n]
	clear(out)
	return out
}

// group returns the ungrouped $asof's group, empty, with room for n rows.
func (sc *scratch) group(n int) *asofGroup {
	g := &sc.all
	if cap(g.rows) < n {
		g.rows, g.at = make([]map[string]any, 0, n), make([]float64, 0, n)
	}
	g.rows, g.at, g.groupEnd, g.appended, g.src, g.cursor = g.rows[:0], g.at[:0], g.groupEnd[:0], g.appended[:0], g.src[:0], 0
	return g
}

// release forgets the rows the samples and the group point at and keeps
// the slices; very large ones are left to the collector.
func (sc *scratch) release() {
	clear(sc.all.rows[:cap(sc.all.rows)])
	if cap(sc.all.rows) > 1<<14 {
		sc.all = asofGroup{}
	}
	for i := range sc.bufs[:sc.used] {
		clear(sc.bufs[i])
		if cap(sc.bufs[i]) > 1<<14 {
			sc.bufs[i] = nil
		}
	}
	sc.used = 0
	scratchPool.Put(sc)
}

func epochAt(v any, present bool, i int) (ms float64) {
	defer func() {
		if reason, ok := refusalReason(recover()); ok {
			refuseSeries("row " + strconv.Itoa(i) + ", at: " + reason)
		}
	}()
	return toEpoch(v, present)
}

// lowerBound is the first sample at or after at.
func lowerBound(s []sample, at float64) int {
	return sort.Search(len(s), func(i int) bool { return !(s[i].at < at) })
}

// bucketRow is one {at, value, count} answer; null marks a value of null.
type bucketRow struct {
	at, value, count float64
	null             bool
	empty            bool // a bucket no row fell in, for the fill
}

// smallCounts are the counts 0-255 as interface values, so that an
// answer's count costs no allocation.
var smallCounts = func() (t [256]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

func (r bucketRow) record() map[string]any {
	var v any
	if !r.null {
		v = r.value
	}
	var count any
	if r.count < float64(len(smallCounts)) {
		count = smallCounts[int(r.count)]
	} else {
		count = r.count
	}
	m := make(map[string]any, 3)
	m["at"], m["value"], m["count"] = r.at, v, count
	return m
}

// resampleSpec is a compiled $resample spec.
type resampleSpec struct {
	ladder    *ladder
	aggregate string
	fill      string
	start     float64
	end       float64
	hasStart  bool
	hasEnd    bool
	at, value *rowSelector
}

// aggregateOf reduces what a bucket or window carried.
func aggregateOf(aggregate string, count, n, sum, min, max float64, first, last *float64) (float64, bool) {
	if aggregate == "count" {
		return count, false
	}
	if n == 0 {
		return 0, true
	}
	switch aggregate {
	case "sum":
		return sum, false
	case "mean":
		return sum / n, false
	case "min":
		return min, false
	case "max":
		return max, false
	case "first":
		return *first, false
	}
	return *last, false
}

// resample buckets the samples, reduces each bucket and fills the empty
// ones; the window is the data's own unless start and end are given.
func resample(f *frame, samples []sample, s *resampleSpec, path string) []bucketRow {
	from, to := 0, len(samples)
	if s.hasStart {
		from = lowerBound(samples, s.start)
	}
	if s.hasEnd {
		to = lowerBound(samples, s.end)
	}
	if from >= to && (!s.hasStart || !s.hasEnd) {
		return nil
	}
	firstAt := s.start
	if !s.hasStart {
		firstAt = samples[from].at
	}
	limit := s.end
	if !s.hasEnd {
		limit = samples[to-1].at + 1
	}
	l := s.ladder
	out := make([]bucketRow, 0, bucketsBetween(l, firstAt, limit))
	empties := 0
	index := l.indexOf(firstAt)
	start := l.startOf(index)
	i := from
	for steps := 0; start < limit; steps++ {
		if steps&63 == 63 {
			// a sparse ladder is work even when it emits nothing
			f.stepsLeft--
			if f.stepsLeft < 0 {
				f.overSteps(path)
			}
		}
		var end float64
		if l.calendar {
			end = l.startOf(index + 1)
		} else {
			end = start + l.width
		}
		count, n, sum := 0.0, 0.0, 0.0
		min, max := math.Inf(1), math.Inf(-1)
		var first, last *float64
		for i < to && samples[i].at < end {
			sm := &samples[i]
			count++
			if !sm.null {
				v := sm.value
				n++
				sum += v
				if v < min {
					min = v
				}
				if v > max {
					max = v
				}
				if first == nil {
					first = &sm.value
				}
				last = &sm.value
			}
			i++
		}
		if count == 0 {
			if s.fill != "omit" {
				empties++
				r := bucketRow{at: start, empty: true}
				switch {
				case s.aggregate == "count", s.fill == "zero":
				default:
					r.null = true
				}
				out = append(out, r)
			}
		} else {
			v, null := aggregateOf(s.aggregate, count, n, sum, min, max, first, last)
			out = append(out, bucketRow{at: start, value: v, null: null, count: count})
		}
		index++
		start = end
	}
	if empties != 0 && s.aggregate != "count" {
		switch s.fill {
		case "locf":
			carryForward(out)
		case "linear":
			interpolate(out)
		}
	}
	return out
}

// bucketsBetween is how many fixed-width buckets the window [from,
// limit) spans, to size the answer once; a calendar ladder or a wide
// window is left to grow.
func bucketsBetween(l *ladder, from, limit float64) int {
	if l.calendar || !(l.width > 0) {
		return 0
	}
	n := (limit-from)/l.width + 2
	if !(n < 4096) {
		return 4096
	}
	return int(n)
}

func carryForward(out []bucketRow) {
	carried, has := 0.0, false
	for i := range out {
		if out[i].empty {
			out[i].value, out[i].null = carried, !has
		} else if !out[i].null {
			carried, has = out[i].value, true
		}
	}
}

// interpolate fills each run of empty buckets on the line between the
// nearest measured buckets on either side; a bucket that held rows and
// no numbers is not an anchor.
func interpolate(out []bucketRow) {
	anchor := func(from, step int) int {
		for i := from; i >= 0 && i < len(out); i += step {
			if !out[i].empty && !out[i].null {
				return i
			}
		}
		if step < 0 {
			return -1
		}
		return len(out)
	}
	for i := 0; i < len(out); {
		if !out[i].empty {
			i++
			continue
		}
		first, last := i, i
		for last+1 < len(out) && out[last+1].empty {
			last++
		}
		before, after := anchor(first-1, -1), anchor(last+1, 1)
		if before >= 0 && after < len(out) {
			a, b := out[before], out[after]
			slope := (b.value - a.value) / (b.at - a.at)
			for k := first; k <= last; k++ {
				out[k].value, out[k].null = a.value+float64(slope*(out[k].at-a.at)), false
			}
		}
		i = last + 1
	}
}

// rollingSpec is a compiled $rolling spec.
type rollingSpec struct {
	span       span
	clock      seriesClock
	aggregate  string
	minPeriods float64
	at, value  *rowSelector
}

// rolling answers one row per sample over the window (at - width, at];
// samples sharing an instant share a window.
func rolling(samples []sample, s *rollingSpec) []bucketRow {
	n := len(samples)
	out := make([]bucketRow, n)
	opensAt := func(at float64) float64 {
		if s.span.calendar {
			return s.clock.epochOf(addUnits(s.clock.partsAt(at), -s.span.months, "month"))
		}
		return at - s.span.width
	}
	extremum := s.aggregate == "min" || s.aggregate == "max"
	sign := -1.0
	if s.aggregate == "min" {
		sign = 1
	}
	var deque []int
	if extremum {
		deque = make([]int, n)
	}
	head, tail := 0, 0
	lo, sum, measured := 0, 0.0, 0.0
	firstAt, lastAt := 0, -1
	for i := 0; i < n; {
		at := samples[i].at
		group := i
		for group+1 < n && samples[group+1].at == at {
			group++
		}
		opens := opensAt(at)
		for lo < i && samples[lo].at <= opens {
			if !samples[lo].null {
				sum -= samples[lo].value
				measured--
			}
			lo++
		}
		for k := i; k <= group; k++ {
			if samples[k].null {
				continue
			}
			v := samples[k].value
			sum += v
			measured++
			lastAt = k
			if extremum {
				for tail > head && float64(sign*(samples[deque[tail-1]].value-v)) >= 0 {
					tail--
				}
				deque[tail] = k
				tail++
			}
		}
		if extremum {
			for tail > head && deque[head] < lo {
				head++
			}
		}
		if firstAt < lo {
			firstAt = lo
		}
		for firstAt <= group && samples[firstAt].null {
			firstAt++
		}
		count := float64(group - lo + 1)
		r := bucketRow{at: at, count: count}
		switch {
		case count < s.minPeriods:
			r.null = true
		case s.aggregate == "count":
			r.value = count
		case measured == 0:
			r.null = true
		case s.aggregate == "sum":
			r.value = sum
		case s.aggregate == "mean":
			r.value = sum / measured
		case extremum:
			r.value = samples[deque[head]].value
		case s.aggregate == "first":
			if r.null = firstAt > group; !r.null {
				r.value = samples[firstAt].value
			}
		default:
			if r.null = lastAt < lo; !r.null {
				r.value = samples[lastAt].value
			}
		}
		for k := i; k <= group; k++ {
			out[k] = r
		}
		i = group + 1
	}
	return out
}

// asofSpec is a compiled $asof spec.
type asofSpec struct {
	direction       string
	tolerance       float64
	by              *rowSelector // nil: no groups
	leftAt, rightAt *rowSelector
}

// canonicalRow is the row as the reference hands it back: a copy with a
// numeric at and a value, or the row itself when it already is one.
// appended says whether it is a copy (rowCopied) and which of at and
// value the copy added after the row's own members, where the
// reference's copy ({...row, at, value}) has them.
func canonicalRow(f *frame, rows []any, s *sample, path string) (row map[string]any, appended uint8) {
	src, _ := rows[s.row].(map[string]any)
	if s.canon {
		return src, 0
	}
	if a, ok := src["at"].(float64); ok && a == s.at {
		w, ok := src["value"]
		if n, isNum := w.(float64); ok && (w == nil && s.null || isNum && !s.null && n == s.value) {
			return src, 0
		}
	}
	appended = rowCopied
	if _, ok := src["at"]; !ok {
		appended |= appendedAt
	}
	if _, ok := src["value"]; !ok {
		appended |= appendedValue
	}
	var v any
	if !s.null {
		v = s.value
	}
	f.chargeObject(len(src)+2, path)
	out := make(map[string]any, len(src)+2)
	for k, x := range src {
		out[k] = x
	}
	out["at"], out["value"] = s.at, v
	return out, appended
}

// what a row's copy added after the row's own members, and that it is a
// copy; rowBits of them per row
const (
	appendedAt uint8 = 1 << iota
	appendedValue
	rowCopied
	rowBits = 3
	rowMask = 1<<rowBits - 1
)

// orderedRow is a row of an as-of answer in the reference's member order:
// the row's own members in their order, then the at and value its copy
// added. A row that added neither is in map order already.
func orderedRow(m map[string]any, appended uint8) any {
	if appended&^rowCopied == 0 || m == nil {
		return m
	}
	out := value.NewObject(len(m))
	for _, k := range value.Keys(m) {
		if k == "at" && appended&appendedAt != 0 || k == "value" && appended&appendedValue != 0 {
			continue
		}
		out.Set(k, m[k])
	}
	if appended&appendedAt != 0 {
		out.Set("at", m["at"])
	}
	if appended&appendedValue != 0 {
		out.Set("value", m["value"])
	}
	return out
}

// joinKey is a group key compared the way a JavaScript Map compares:
// scalars by value, objects and arrays by identity.
type joinKey struct {
	kind byte
	s    string
	n    float64
	p    uintptr
	l    int
}

// byKey is the group key of a row: keyOf its by member, except that an
// empty array, which Go gives no address of its own, is told apart by
// the row it came from (src, as the operand holds it), as the reference
// tells two empty arrays apart. A row joined with itself (the same
// series on both sides) thus still matches its own.
func byKey(s *asofSpec, row map[string]any, src any) joinKey {
	k := keyOf(s.by.read(row))
	if k.kind == 'a' && k.l == 0 {
		switch x := src.(type) {
		case map[string]any, []any:
			k.p = uintptr(reflect.ValueOf(x).UnsafePointer())
			k.l = -1
		}
	}
	return k
}

func keyOf(v any, present bool) joinKey {
	if !present {
		return joinKey{kind: 'u'}
	}
	switch x := v.(type) {
	case nil:
		return joinKey{kind: 'z'}
	case bool:
		if x {
			return joinKey{kind: 'b', n: 1}
		}
		return joinKey{kind: 'b'}
	case float64:
		return joinKey{kind: 'n', n: x}
	case string:
		return joinKey{kind: 's', s: x}
	case inherited:
		return joinKey{kind: 'i', s: string(x)}
	case []any:
		return joinKey{kind: 'a', p: uintptr(reflect.ValueOf(x).UnsafePointer()), l: len(x)}
	}
	return joinKey{kind: 'o', p: uintptr(reflect.ValueOf(v).UnsafePointer())}
}

// asofGroup is the right side's rows of one key, with the walk's cursor.
type asofGroup struct {
	rows []map[string]any
	// appended is canonicalRow's answer for each row, kept only when the
	// evaluation keeps member order, and src the row's index among the
	// right rows, kept only when they hold objects the query built
	appended []uint8
	src      []int32
	at       []float64
	groupEnd []int
	cursor   int
}

func newGroup() *asofGroup { return &asofGroup{} }

func (g *asofGroup) seal() {
	if cap(g.groupEnd) < len(g.at) {
		g.groupEnd = make([]int, len(g.at))
	}
	g.groupEnd = g.groupEnd[:len(g.at)]
	for i := len(g.at) - 1; i >= 0; i-- {
		if i+1 < len(g.at) && g.at[i+1] == g.at[i] {
			g.groupEnd[i] = g.groupEnd[i+1]
		} else {
			g.groupEnd[i] = i
		}
	}
}

// asof joins each left row to the right row current for it, walking one
// cursor forward per group.
//
// When the evaluation keeps member order, order is not nil: asof fills
// in what canonicalRow said of each join's left row (the low rowBits)
// and of its right row (the next rowBits) and, when order holds the rows
// as the query holds them, which rows each join took.
func asof(f *frame, sc *scratch, leftRows, rightRows []any, left, right []sample, s *asofSpec, path string, order *asofOrder) []asofJoin {
	tracks := order != nil && order.tracks()
	var groups map[joinKey]*asofGroup
	var all *asofGroup
	if s.by == nil {
		// one group holds every right row: its slices are lent by
		// scratch (what the join answers is copied out of them)
		all = sc.group(len(right))
	} else {
		groups = map[joinKey]*asofGroup{}
	}
	for i := range right {
		row, added := canonicalRow(f, rightRows, &right[i], path)
		g := all
		if s.by != nil {
			k := byKey(s, row, rightRows[right[i].row])
			if g = groups[k]; g == nil {
				g = newGroup()
				groups[k] = g
			}
		}
		g.rows = append(g.rows, row)
		if order != nil {
			g.appended = append(g.appended, added)
		}
		if tracks {
			g.src = append(g.src, int32(right[i].row))
		}
		g.at = append(g.at, right[i].at)
	}
	if all != nil {
		all.seal()
	}
	for _, g := range groups {
		g.seal()
	}
	out := make([]asofJoin, len(left))
	if order != nil {
		order.appended = make([]uint8, len(left))
	}
	if tracks {
		order.src = make([]int32, 2*len(left))
	}
	for i := range left {
		row, added := canonicalRow(f, leftRows, &left[i], path)
		if order != nil {
			order.appended[i] = added
		}
		if tracks {
			order.src[2*i], order.src[2*i+1] = int32(left[i].row), -1
		}
		g := all
		if s.by != nil {
			g = groups[byKey(s, row, leftRows[left[i].row])]
		}
		at := left[i].at
		if g == nil {
			out[i] = asofJoin{left: row}
			continue
		}
		for g.cursor < len(g.at) && g.at[g.cursor] <= at {
			g.cursor++
		}
		var index int
		out[i], index = pick(row, at, g, s)
		if order != nil && index >= 0 {
			order.appended[i] |= g.appended[index] << rowBits
		}
		if tracks && index >= 0 {
			order.src[2*i+1] = g.src[index]
		}
	}
	return out
}

// asofJoin is one {left, right, distance} answer; a nil right has no
// match, and then its distance is null.
type asofJoin struct {
	left, right map[string]any
	distance    float64
}

func (j *asofJoin) record() map[string]any {
	if j.right == nil {
		return map[string]any{"left": j.left, "right": nil, "distance": nil}
	}
	return map[string]any{"left": j.left, "right": j.right, "distance": j.distance}
}

// asofOrder is what building the joins in the reference's member order
// takes, for an evaluation that walks what it builds: what canonicalRow
// said of each join's rows and, when the rows held objects the query
// built (*value.Object, read by the join as maps), the rows as the query
// holds them and which of them each join took. A row the reference hands
// back unchanged is then the held row itself, and a copy is
// {...row, at, value} in the held row's order.
type asofOrder struct {
	appended            []uint8 // per join: the left row's bits, then the right's << rowBits
	leftHeld, rightHeld []any   // nil: the rows hold no *value.Object
	src                 []int32 // per join: its left row's index, then its right row's (-1: none)
}

// tracks reports whether the joins must say which rows they took.
func (o *asofOrder) tracks() bool { return o.leftHeld != nil || o.rightHeld != nil }

// ordered is the i-th answer as the reference builds it, {left, right,
// distance} in that order, for an evaluation that walks what it builds.
func (j *asofJoin) ordered(i int, o *asofOrder) *value.Object {
	bits := o.appended[i]
	out := value.NewObject(3)
	out.Set("left", o.row(j.left, bits&rowMask, o.leftHeld, 2*i))
	if j.right == nil {
		out.Set("right", nil)
		out.Set("distance", nil)
		return out
	}
	out.Set("right", o.row(j.right, bits>>rowBits, o.rightHeld, 2*i+1))
	out.Set("distance", j.distance)
	return out
}

// row is one row of an answer in the reference's order: m as the join
// read it, bits what canonicalRow said of it, held the rows it came from
// as the query holds them (nil when they are the rows the join read).
func (o *asofOrder) row(m map[string]any, bits uint8, held []any, k int) any {
	if held == nil {
		return orderedRow(m, bits)
	}
	h := held[o.src[k]]
	if bits&rowCopied == 0 {
		return h
	}
	keys, _ := value.Ordered(h)
	out := value.NewObject(len(keys) + 2)
	for _, name := range keys {
		x, _ := value.Member(h, name)
		out.Set(name, x)
	}
	out.Set("at", m["at"])
	out.Set("value", m["value"])
	return out
}

// pick joins a left row to its right row, and says which of the group's
// rows that is (-1 for none).
func pick(row map[string]any, at float64, g *asofGroup, s *asofSpec) (asofJoin, int) {
	back := g.cursor - 1
	forward := -1
	switch {
	case back >= 0 && g.at[back] == at:
		forward = back
	case g.cursor < len(g.at):
		forward = g.groupEnd[g.cursor]
	}
	backDistance, forwardDistance := math.Inf(1), math.Inf(1)
	if back >= 0 {
		backDistance = at - g.at[back]
	}
	if forward >= 0 {
		forwardDistance = g.at[forward] - at
	}
	index, distance := back, backDistance
	switch {
	case s.direction == "forward":
		index, distance = forward, forwardDistance
	case s.direction == "nearest" && !(backDistance <= forwardDistance):
		index, distance = forward, forwardDistance
	}
	if index < 0 || distance > s.tolerance {
		return asofJoin{left: row}, -1
	}
	return asofJoin{left: row, right: g.rows[index], distance: distance}, index
}
