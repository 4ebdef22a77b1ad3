package query

import (
	"math"
	"strings"
	"sync/atomic"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// §8.13 dates and times. Every operator is a pure function of its
// operands: there is no current time, and no zone database either — the
// section knows only the offsets a string spells, so the engine needs
// neither a clock nor the time package.

// dateArg decomposes an RFC 3339 operand, JQ2001 on anything else.
func dateArg(v any, path string) dateParts {
	if s, ok := v.(string); ok {
		if p, ok := parseDateParts(s); ok {
			return p
		}
	}
	throw(fault.JQ2001, "expected an RFC 3339 date, time, or date-time string, got "+quoteOrDescribe(v), path)
	return dateParts{}
}

// quoteOrDescribe shows a malformed string itself, as JSON.stringify would.
func quoteOrDescribe(v any) string {
	if s, ok := v.(string); ok {
		var b strings.Builder
		value.WriteString(&b, s)
		return b.String()
	}
	return describe(v)
}

// unitArg reads a calendar unit; units are data, so a bad one is JQ2001.
func unitArg(v any, path string) string {
	if s, ok := v.(string); ok && isDateUnit(s) {
		return s
	}
	throw(fault.JQ2001, "expected a calendar unit ('year', 'month', 'day', ...), got "+describe(v), path)
	return ""
}

// refusedAt turns the kernel's refusal, recovered by the caller's
// deferred function, into JQ2001 against the date operand; any other
// panic goes on unwinding.
func refusedAt(r any, path string) {
	if r == nil {
		return
	}
	if d, ok := r.(dateRefusal); ok {
		throw(fault.JQ2001, d.reason, path)
	}
	panic(r)
}

// emitDate renders a produced date and charges its bytes.
func emitDate(f *frame, p *dateParts, opPath string) any {
	s := formatDate(p)
	f.alloc(len(s), opPath)
	return s
}

func dateTest(test func(string) bool) opEntry {
	return unary(func(a []arg, _ string) getter {
		g := a[0].get
		return func(f *frame) any {
			s, ok := g(f).(string)
			return ok && test(s)
		}
	})
}

// dateComponent reads one lexical component; a missing half is -1 and
// refused.
func dateComponent(half string, pick func(p *dateParts) float64) opEntry {
	return unary(func(a []arg, _ string) getter {
		g, path := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			p := dateArg(v, path)
			n := pick(&p)
			if n < 0 {
				throw(fault.JQ2001, "'"+v.(string)+"' carries no "+half+" component", path)
			}
			return n
		}
	})
}

// onDate wraps a component that only a calendar has.
func onDate(pick func(p *dateParts) float64) func(p *dateParts) float64 {
	return func(p *dateParts) float64 {
		if p.year < 0 {
			return -1
		}
		return pick(p)
	}
}

func init() {
	operators["$is-date"] = dateTest(isDateOnly)
	operators["$is-time"] = dateTest(isTimeOnly)
	operators["$is-datetime"] = dateTest(isDateTime)
	operators["$is-duration"] = dateTest(isDuration)

	operators["$year"] = dateComponent("date", func(p *dateParts) float64 { return p.year })
	operators["$month"] = dateComponent("date", func(p *dateParts) float64 { return p.month })
	operators["$day"] = dateComponent("date", func(p *dateParts) float64 { return p.day })
	operators["$hours"] = dateComponent("time", func(p *dateParts) float64 { return p.hours })
	operators["$minutes"] = dateComponent("time", func(p *dateParts) float64 { return p.minutes })
	operators["$seconds"] = dateComponent("time", func(p *dateParts) float64 { return p.second })
	operators["$week"] = dateComponent("date", onDate(func(p *dateParts) float64 { _, w := isoWeek(p); return w }))
	operators["$week-year"] = dateComponent("date", onDate(func(p *dateParts) float64 { y, _ := isoWeek(p); return y }))
	operators["$quarter"] = dateComponent("date", onDate(func(p *dateParts) float64 { return quarterOf(p.month) }))
	operators["$weekday"] = dateComponent("date", onDate(func(p *dateParts) float64 {
		return isoWeekday(daysFromCivil(p.year, p.month, p.day))
	}))

	operators["$offset"] = unary(func(a []arg, _ string) getter {
		g, path := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			if p := dateArg(v, path); p.hasOffset {
				return p.offset
			}
			return empty
		}
	})
	operators["$epoch"] = unary(func(a []arg, _ string) getter {
		g, path := a[0].get, a[0].path
		return func(f *frame) any {
			v := g(f)
			if isEmpty(v) {
				return empty
			}
			p := dateArg(v, path)
			ms := epochOf(&p)
			if ms != ms {
				throw(fault.JQ2001, "'"+v.(string)+"' carries no date component", path)
			}
			return ms
		}
	})
	operators["$datetime"] = unary(buildDatetime)
	operators["$date-add"] = nary(2, 3, dateShift(1))
	operators["$date-sub"] = nary(2, 3, dateShift(-1))
	operators["$start-of"] = nary(2, 2, dateTrunc(startOf))
	operators["$end-of"] = nary(2, 2, dateTrunc(endOf))
	operators["$date-diff"] = nary(3, 3, buildDateDiff)
	operators["$date-format"] = opEntry{min: 2, max: 2, schema: -1, raw: -1, checked: buildDateFormat}
}

// buildDatetime is the inverse of $epoch, in canonical UTC form; an
// instant with no RFC 3339 spelling (beyond ±8.64e15 ms, or outside the
// years 0000-9999) is JQ2001.
func buildDatetime(a []arg, opPath string) getter {
	g, path := a[0].get, a[0].path
	return func(f *frame) any {
		v := g(f)
		if isEmpty(v) {
			return empty
		}
		ms, ok := v.(float64)
		if !ok {
			throw(fault.JQ2001, "'$datetime' takes epoch milliseconds, got "+describe(v), path)
		}
		iso := ""
		if !math.IsInf(ms, 0) && ms == ms && math.Abs(ms) <= 8.64e15 {
			p := partsFromEpoch(ms)
			iso = formatDate(&p)
		}
		if !isDateTime(iso) {
			throw(fault.JQ2001, numText(ms)+" is outside the range RFC 3339 can spell", path)
		}
		f.alloc(len(iso), opPath)
		return iso
	}
}

// dateShift is $date-add / $date-sub: [date, duration] or [date, amount,
// unit], keeping the date's lexical form.
func dateShift(sign float64) func(a []arg, opPath string) getter {
	return func(a []arg, opPath string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			if isEmpty(v) {
				return empty
			}
			p := dateArg(v, a[0].path)
			second := a[1].get(f)
			if isEmpty(second) {
				return empty
			}
			if len(a) == 2 {
				s, _ := second.(string)
				d, ok := parseDuration(s)
				if !ok {
					throw(fault.JQ2001, "expected an ISO 8601 duration, got "+quoteOrDescribe(second), a[1].path)
				}
				defer func() { refusedAt(recover(), a[0].path) }()
				out := addDuration(p, d, sign)
				return emitDate(f, &out, opPath)
			}
			n, ok := second.(float64)
			if !ok {
				throw(fault.JQ2001, "expected a number of units, got "+describe(second), a[1].path)
			}
			unit := unitArg(a[2].get(f), a[2].path)
			defer func() { refusedAt(recover(), a[0].path) }()
			out := addUnits(p, float64(sign*n), unit)
			return emitDate(f, &out, opPath)
		}
	}
}

// dateTrunc is $start-of / $end-of: [date, unit].
func dateTrunc(truncate func(dateParts, string) dateParts) func(a []arg, opPath string) getter {
	return func(a []arg, opPath string) getter {
		return func(f *frame) any {
			v := a[0].get(f)
			if isEmpty(v) {
				return empty
			}
			p := dateArg(v, a[0].path)
			unit := unitArg(a[1].get(f), a[1].path)
			defer func() { refusedAt(recover(), a[0].path) }()
			out := truncate(p, unit)
			return emitDate(f, &out, opPath)
		}
	}
}

// buildDateDiff counts whole units from the first value to the second:
// months, quarters and years on the calendar (clamped like $date-add),
// the rest by dividing the span between the two instants.
func buildDateDiff(a []arg, _ string) getter {
	return func(f *frame) any {
		fv, tv := a[0].get(f), a[1].get(f)
		if isEmpty(fv) || isEmpty(tv) {
			return empty
		}
		from, to := dateArg(fv, a[0].path), dateArg(tv, a[1].path)
		unit := unitArg(a[2].get(f), a[2].path)
		if per := monthsPer(unit); per != 0 {
			if from.year < 0 || to.year < 0 {
				path := a[1].path
				if from.year < 0 {
					path = a[0].path
				}
				throw(fault.JQ2001, "cannot measure a span from a value with no date", path)
			}
			months := monthsBetween(&from, &to)
			if per == 1 {
				return months
			}
			return math.Trunc(months / per)
		}
		fromMs, toMs := epochOf(&from), epochOf(&to)
		if fromMs != fromMs || toMs != toMs {
			// the reference names the first operand even when the second
			// is the one without a date
			throw(fault.JQ2001, "cannot measure a span from a value with no date", a[0].path)
		}
		return math.Trunc((toMs - fromMs) / unitWidth(unit))
	}
}

// buildDateFormat renders through an LDML pattern. A literal pattern is
// compiled with the query, in the reference's second compile phase (JQ0003
// when bad, after every fault of the first phase anywhere in the
// document); a computed one is compiled on first use and cached while it
// repeats (JQ2001 when bad).
func buildDateFormat(a []arg, opPath string, later func(func())) getter {
	if lit, ok := literalString(a[1].raw); ok {
		var format func(p *dateParts) string
		later(func() {
			var perr *patternError
			format, perr = compileDatePattern(lit)
			if perr != nil {
				fail(fault.JQ0003, "'$date-format' pattern: "+perr.reason, opPath)
			}
		})
		return func(f *frame) any {
			v := a[0].get(f)
			if isEmpty(v) {
				return empty
			}
			p := dateArg(v, a[0].path)
			s := format(&p)
			f.alloc(len(s), opPath)
			return s
		}
	}
	// one compiled pattern per call site, as the reference keeps; a
	// compiled query is shared between goroutines, hence the atomic
	var last atomic.Pointer[compiledPattern]
	return func(f *frame) any {
		v := a[0].get(f)
		if isEmpty(v) {
			return empty
		}
		pv := a[1].get(f)
		pattern, ok := pv.(string)
		if !ok {
			throw(fault.JQ2001, "expected a date pattern, got "+describe(pv), a[1].path)
		}
		c := last.Load()
		if c == nil || c.pattern != pattern {
			format, perr := compileDatePattern(pattern)
			if perr != nil {
				throw(fault.JQ2001, "'$date-format' pattern: "+perr.reason, a[1].path)
			}
			c = &compiledPattern{pattern, format}
			last.Store(c)
		}
		p := dateArg(v, a[0].path)
		s := c.format(&p)
		f.alloc(len(s), opPath)
		return s
	}
}

type compiledPattern struct {
	pattern string
	format  func(*dateParts) string
}

// literalString is the reference's literal node holding a string: plain
// text, a '$$' escape, or {"$const": "..."}.
func literalString(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		if x == "" || x[0] != '$' {
			return x, true
		}
		if strings.HasPrefix(x, "$$") {
			return x[1:], true
		}
	case map[string]any:
		if s, ok := x["$const"].(string); ok && len(x) == 1 {
			return s, true
		}
	}
	return "", false
}
