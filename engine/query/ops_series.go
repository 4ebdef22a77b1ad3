package query

import (
	"math"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// §8.16 time series. A spec is a literal read once, in the reference's
// second compile phase: whatever the document authored is checked there
// (JQ0003), whatever the data decides is JQ2001 against the operand
// that carried it. Instants are epoch milliseconds in and out.

var (
	clockMembers    = []string{"zone", "offset", "disambiguation"}
	resampleMembers = []string{"every", "origin", "start", "end", "aggregate", "fill", "at", "value", "zone", "offset", "disambiguation"}
	rollingMembers  = []string{"width", "aggregate", "minPeriods", "at", "value", "zone", "offset", "disambiguation"}
	asofMembers     = []string{"direction", "tolerance", "by", "leftAt", "rightAt"}
	aggregates      = []string{"sum", "mean", "min", "max", "first", "last", "count"}
	fills           = []string{"omit", "null", "zero", "locf", "linear"}
	directions      = []string{"backward", "forward", "nearest"}
	disambiguations = []string{"reject", "earlier", "later"}
)

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// nearMiss names the admitted member a misspelling is closest to: a
// case-folded match, or a prefix within two characters either way.
func nearMiss(name string, allowed []string) string {
	lower := strings.ToLower(name)
	for _, candidate := range allowed {
		other := strings.ToLower(candidate)
		if other == lower ||
			strings.HasPrefix(other, lower) && utf16Len(other)-utf16Len(lower) <= 2 ||
			strings.HasPrefix(lower, other) && utf16Len(lower)-utf16Len(other) <= 2 {
			return " (did you mean '" + candidate + "'?)"
		}
	}
	return ""
}

func quotedList(names []string) string {
	return "'" + strings.Join(names, "', '") + "'"
}

// requireSpec confirms a literal spec object naming admitted members only.
func requireSpec(raw any, allowed []string, op, path string) map[string]any {
	spec, ok := raw.(map[string]any)
	if !ok {
		fail(fault.JQ0003, "'"+op+"' takes a literal spec object, got "+describe(raw), path)
	}
	for _, name := range value.Keys(spec) {
		if !contains(allowed, name) {
			fail(fault.JQ0003, "'"+op+"' has no spec member '"+name+"'"+nearMiss(name, allowed)+
				"; it admits "+quotedList(allowed), path)
		}
	}
	return spec
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func requireEnum(v any, allowed []string, member, path string) string {
	s, ok := v.(string)
	if !ok || !contains(allowed, s) {
		fail(fault.JQ0003, "'"+member+"' is "+quotedList(allowed)+", got "+quoteOrDescribe(v), path)
	}
	return s
}

func requireFinite(v any, member, path string) float64 {
	n, ok := v.(float64)
	if !ok || math.IsInf(n, 0) || n != n {
		fail(fault.JQ0003, "'"+member+"' is a finite number, got "+describe(v), path)
	}
	return n
}

// requireInstantOrSpan admits the two spellings of an instant or a span:
// a finite number or a string, which the kernel reads later.
func requireInstantOrSpan(v any, member, what, path string) any {
	switch x := v.(type) {
	case float64:
		if !math.IsInf(x, 0) && x == x {
			return v
		}
	case string:
		return v
	}
	fail(fault.JQ0003, "'"+member+"' is "+what+", got "+describe(v), path)
	return nil
}

const (
	anInstant = "epoch milliseconds or an RFC 3339 string"
	aSpan     = "a duration string or a count of milliseconds"
)

// compileSelector reads a row selector: a singular path where $ is the
// row. One name is kept as a bare name, read as JavaScript reads it.
func compileSelector(v any, member, path string) *rowSelector {
	src, ok := v.(string)
	if !ok {
		fail(fault.JQ0003, "'"+member+"' is a singular path into the row, got "+describe(v), path)
	}
	parsed, detail := parseRFC(src)
	if parsed == nil {
		fail(fault.JQ0003, "'"+member+"': "+detail, path)
	}
	if len(parsed.segs) == 0 {
		fail(fault.JQ0003, "'"+member+"' selects the whole row rather than a member of it", path)
	}
	if parsed.steps == nil {
		fail(fault.JQ0003, "'"+member+"' is a singular path — one name or index per segment, no wildcard,"+
			" descendant or filter", path)
	}
	if len(parsed.steps) == 1 && !parsed.steps[0].isIdx {
		return &rowSelector{name: parsed.steps[0].name}
	}
	return &rowSelector{path: parsed}
}

// compileClock reads the calendar context: UTC, or a constant offset. A
// named zone needs a provider the host injects, and jetflow has none.
func compileClock(spec map[string]any, path string) seriesClock {
	var c seriesClock
	if z, ok := spec["zone"]; ok {
		name, ok := z.(string)
		if !ok {
			fail(fault.JQ0003, "'zone' is an IANA zone name, got "+describe(z), path)
		}
		if name != "UTC" {
			fail(fault.JQ0003, "the zone '"+name+"' needs a time-zone provider: this suite bundles no tzdb, so"+
				" a named zone is compiled with options.zoneProvider (toParts / toEpoch)."+
				" 'UTC' and a numeric 'offset' need none", path)
		}
	}
	if o, ok := spec["offset"]; ok {
		c.offset = requireFinite(o, "offset", path)
	}
	if d, ok := spec["disambiguation"]; ok {
		requireEnum(d, disambiguations, "disambiguation", path)
	}
	return c
}

// kernelChecks runs the kernel's own checks of a literal spec, turning
// its refusal into JQ0003 with prefix.
func kernelChecks(prefix, path string, check func()) {
	defer func() {
		if reason, ok := refusalReason(recover()); ok {
			fail(fault.JQ0003, prefix+reason, path)
		}
	}()
	check()
}

// kernelRun runs a kernel over data, turning its refusal into JQ2001.
func kernelRun(path string, run func()) {
	defer func() {
		if reason, ok := refusalReason(recover()); ok {
			throw(fault.JQ2001, reason, path)
		}
	}()
	run()
}

// seriesRows is a series operand: a sequence of rows, or one array
// holding them, or one row; the empty sequence is no rows.
func seriesRows(v any, path string) []any {
	switch x := v.(type) {
	case emptySeq:
		return nil
	case *multi:
		return x.items()
	case []any:
		return x
	case map[string]any:
		return []any{x}
	}
	throw(fault.JQ2001, "expected a series (records with an instant and a reading), got "+describe(v), path)
	return nil
}

// heldSeries is seriesRows over an operand of $asof, which hands rows
// back: the rows as the join reads them (objects as maps) and, when the
// evaluation keeps member order and the operand holds objects the query
// built, the same rows as the query holds them (else nil).
func heldSeries(f *frame, v any, path string) (rows, held []any) {
	if !f.built || !holdsObject(v) {
		return seriesRows(v, path), nil
	}
	rows = seriesRows(plainItems(v), path)
	if !f.keep {
		return rows, nil
	}
	switch x := v.(type) {
	case *multi:
		held = x.items()
	case []any:
		held = x
	default:
		held = []any{v}
	}
	return rows, held
}

// holdsObject is value.HasObject over each item of a sequence.
func holdsObject(v any) bool {
	m, ok := v.(*multi)
	if !ok {
		return value.HasObject(v)
	}
	return slices.ContainsFunc(m.items(), value.HasObject)
}

// emitRows turns answers into a sequence of records, charged.
func emitRows(f *frame, rows []bucketRow, path string) any {
	for range rows {
		f.chargeObject(3, path)
	}
	f.charge(len(rows), path)
	switch len(rows) {
	case 0:
		return empty
	case 1:
		return rows[0].record()
	}
	return &multi{rows: rows}
}

func init() {
	operators["$overlaps"] = nary(2, 2, buildOverlaps)
	operators["$time-bucket"] = withSpec(2, 4, 3, buildTimeBucket)
	operators["$resample"] = withSpec(2, 2, 1, buildResample)
	operators["$rolling"] = withSpec(2, 2, 1, buildRolling)
	operators["$asof"] = withSpec(2, 3, 2, buildAsof)
}

// interval reads one {start, end} operand's bounds.
func intervalArg(v any, path string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		throw(fault.JQ2001, "expected an interval record { start, end }, got "+describe(v), path)
	}
	return m
}

func intervalBounds(m map[string]any, role string) (start, end float64) {
	func() {
		defer func() {
			if reason, ok := refusalReason(recover()); ok {
				refuseSeries(role + " has a bound that names no instant: " + reason)
			}
		}()
		s, ok := m["start"]
		start = toEpoch(s, ok)
		e, ok := m["end"]
		end = toEpoch(e, ok)
	}()
	if !(start < end) {
		refuseSeries(role + " ends at " + numText(end) + ", at or before its start " + numText(start))
	}
	return start, end
}

// buildOverlaps: do two half-open intervals share an instant? Touching
// spans do not; every refusal of a bound names the left operand.
func buildOverlaps(a []arg, _ string) getter {
	return func(f *frame) any {
		lv := a[0].get(f)
		if isEmpty(lv) {
			return empty
		}
		rv := a[1].get(f)
		if isEmpty(rv) {
			return empty
		}
		l, r := intervalArg(lv, a[0].path), intervalArg(rv, a[1].path)
		var out bool
		kernelRun(a[0].path, func() {
			ls, le := intervalBounds(l, "the left interval")
			rs, re := intervalBounds(r, "the right interval")
			out = ls < re && rs < le
		})
		return out
	}
}

// literalValue is the reference's literal node: a plain scalar, a
// string that is no path, a '$$' escape, or {"$const": v}.
func literalValue(raw any) (any, bool) {
	switch x := raw.(type) {
	case nil, bool, float64:
		return x, true
	case map[string]any:
		if v, ok := x["$const"]; ok && len(x) == 1 {
			return v, true
		}
		return nil, false
	}
	return literalString(raw)
}

// buildTimeBucket: [at, every, origin?, context?] → the instant that
// labels the bucket at falls in. A literal width and origin compile with
// the query; computed ones compile per evaluation.
func buildTimeBucket(a []arg, _ string, later func(func())) getter {
	var clock seriesClock
	var fixed *ladder
	later(func() {
		if len(a) == 4 {
			clock = compileClock(requireSpec(a[3].raw, clockMembers, "$time-bucket", a[3].path), a[3].path)
		}
		every, ok := literalValue(a[1].raw)
		if !ok {
			return
		}
		var origin any
		if len(a) >= 3 {
			o, ok := literalValue(a[2].raw)
			if !ok {
				return
			}
			origin = o
		}
		kernelChecks("'$time-bucket': ", a[1].path, func() { fixed = compileLadder(every, origin, clock) })
	})
	return func(f *frame) any {
		at := a[0].get(f)
		if isEmpty(at) {
			return empty
		}
		every := a[1].get(f)
		if isEmpty(every) {
			return empty
		}
		var origin any
		if len(a) >= 3 {
			if origin = a[2].get(f); isEmpty(origin) {
				origin = nil
			}
		}
		l := fixed
		if l == nil {
			switch every.(type) {
			case string, float64:
			default:
				throw(fault.JQ2001, "expected a bucket width, got "+describe(every), a[1].path)
			}
			kernelRun(a[1].path, func() { l = compileLadder(every, origin, clock) })
		}
		var out float64
		kernelRun(a[0].path, func() { out = l.floor(toEpoch(at, true)) })
		return out
	}
}

// specOf checks the spec's members and that the required one is there.
func specOf(a arg, members []string, op, required string) map[string]any {
	spec := requireSpec(a.raw, members, op, a.path)
	if _, ok := spec[required]; !ok {
		fail(fault.JQ0003, "'"+op+"' needs a spec member '"+required+"'", a.path)
	}
	return spec
}

func selectorMember(spec map[string]any, member, path string, dflt *rowSelector) *rowSelector {
	if v, ok := spec[member]; ok {
		return compileSelector(v, member, path)
	}
	return dflt
}

func buildResample(a []arg, _ string, later func(func())) getter {
	s := &resampleSpec{aggregate: "mean", fill: "omit", at: atMember, value: valueMember}
	later(func() {
		path := a[1].path
		spec := specOf(a[1], resampleMembers, "$resample", "every")
		clock := compileClock(spec, path)
		every := requireInstantOrSpan(spec["every"], "every", aSpan, path)
		var origin, start, end any
		if v, ok := spec["origin"]; ok {
			origin = requireInstantOrSpan(v, "origin", anInstant, path)
		}
		if v, ok := spec["start"]; ok {
			start = requireInstantOrSpan(v, "start", anInstant, path)
		}
		if v, ok := spec["end"]; ok {
			end = requireInstantOrSpan(v, "end", anInstant, path)
		}
		if v, ok := spec["aggregate"]; ok {
			s.aggregate = requireEnum(v, aggregates, "aggregate", path)
		}
		if v, ok := spec["fill"]; ok {
			s.fill = requireEnum(v, fills, "fill", path)
		}
		s.at = selectorMember(spec, "at", path, atMember)
		s.value = selectorMember(spec, "value", path, valueMember)
		kernelChecks("'$resample' spec: ", path, func() {
			s.ladder = compileLadder(every, origin, clock)
			if s.hasStart = start != nil; s.hasStart {
				s.start = toEpoch(start, true)
			}
			if s.hasEnd = end != nil; s.hasEnd {
				s.end = toEpoch(end, true)
			}
			if s.hasStart && s.hasEnd && !(s.start < s.end) {
				refuseSeries("the window ends at " + numText(s.end) + ", at or before its start " + numText(s.start))
			}
			if s.hasStart && s.hasEnd && s.ladder.calendar {
				// the reference walks an explicit window's calendar
				// boundaries at compile time; one it cannot name is
				// refused there, and such a boundary is at an end
				s.ladder.startOf(s.ladder.indexOf(s.start))
				if k := s.ladder.indexOf(s.end); s.ladder.startOf(k) < s.end {
					s.ladder.startOf(k + 1)
				}
			}
		})
	})
	return func(f *frame) any {
		rows := seriesRows(a[0].get(f), a[0].path)
		var out []bucketRow
		kernelRun(a[1].path, func() {
			sc := borrowScratch()
			out = resample(f, canonicalSamples(f, sc, rows, s.at, s.value, a[1].path), s, a[1].path)
			sc.release()
		})
		return emitRows(f, out, a[1].path)
	}
}

func buildRolling(a []arg, _ string, later func(func())) getter {
	s := &rollingSpec{aggregate: "mean", minPeriods: 1, at: atMember, value: valueMember}
	later(func() {
		path := a[1].path
		spec := specOf(a[1], rollingMembers, "$rolling", "width")
		s.clock = compileClock(spec, path)
		width := requireInstantOrSpan(spec["width"], "width", aSpan, path)
		if v, ok := spec["aggregate"]; ok {
			s.aggregate = requireEnum(v, aggregates, "aggregate", path)
		}
		if v, ok := spec["minPeriods"]; ok {
			s.minPeriods = requireFinite(v, "minPeriods", path)
		}
		s.at = selectorMember(spec, "at", path, atMember)
		s.value = selectorMember(spec, "value", path, valueMember)
		kernelChecks("'$rolling' spec: ", path, func() {
			s.span = compileSpan(width)
			if m := s.minPeriods; m != math.Trunc(m) || m < 1 {
				refuseSeries("minPeriods is a positive whole number, not " + numText(m))
			}
		})
	})
	return func(f *frame) any {
		rows := seriesRows(a[0].get(f), a[0].path)
		var out []bucketRow
		kernelRun(a[1].path, func() {
			sc := borrowScratch()
			out = rolling(canonicalSamples(f, sc, rows, s.at, s.value, a[1].path), s)
			sc.release()
		})
		return emitRows(f, out, a[1].path)
	}
}

// requireTolerance is the kernel's check of a tolerance: a non-negative
// fixed width.
func requireTolerance(v any) float64 {
	ms, isNumber := v.(float64)
	if str, ok := v.(string); ok {
		d, ok := parseDuration(str)
		if !ok || d.negative {
			refuseSeries("tolerance '" + str + "' is not a non-negative ISO 8601 duration")
		}
		if ms = durationMs(d); ms != ms {
			refuseSeries("tolerance '" + str + "' is a calendar duration and has no fixed width")
		}
		isNumber = true
	}
	if !isNumber || math.IsInf(ms, 0) || ms != ms || ms < 0 {
		refuseSeries("tolerance is a non-negative number of milliseconds or a fixed ISO 8601 duration")
	}
	return ms
}

func buildAsof(a []arg, opPath string, later func(func())) getter {
	s := &asofSpec{direction: "backward", tolerance: math.Inf(1), leftAt: atMember, rightAt: atMember}
	specPath := opPath
	if len(a) == 3 {
		specPath = a[2].path
	}
	later(func() {
		if len(a) < 3 {
			return
		}
		spec := requireSpec(a[2].raw, asofMembers, "$asof", specPath)
		if v, ok := spec["direction"]; ok {
			s.direction = requireEnum(v, directions, "direction", specPath)
		}
		tolerance, hasTolerance := spec["tolerance"]
		if hasTolerance {
			requireInstantOrSpan(tolerance, "tolerance", aSpan, specPath)
		}
		s.by = selectorMember(spec, "by", specPath, nil)
		s.leftAt = selectorMember(spec, "leftAt", specPath, atMember)
		s.rightAt = selectorMember(spec, "rightAt", specPath, atMember)
		if hasTolerance {
			kernelChecks("'$asof' spec: ", specPath, func() { s.tolerance = requireTolerance(tolerance) })
		}
	})
	return func(f *frame) any {
		left, leftHeld := heldSeries(f, a[0].get(f), a[0].path)
		right, rightHeld := heldSeries(f, a[1].get(f), a[1].path)
		var order *asofOrder
		if f.keep {
			order = &asofOrder{leftHeld: leftHeld, rightHeld: rightHeld}
		}
		var out []asofJoin
		kernelRun(specPath, func() {
			sc := borrowScratch()
			l := canonicalSamples(f, sc, left, s.leftAt, valueMember, specPath)
			r := canonicalSamples(f, sc, right, s.rightAt, valueMember, specPath)
			out = asof(f, sc, left, right, l, r, s, specPath, order)
			sc.release()
		})
		for range out {
			f.chargeObject(3, specPath)
		}
		f.charge(len(out), specPath)
		switch len(out) {
		case 0:
			return empty
		case 1:
			if order != nil {
				f.built = true
				return out[0].ordered(0, order)
			}
			return out[0].record()
		}
		if order != nil {
			f.built = true
		}
		return &multi{joins: out, order: order}
	}
}
