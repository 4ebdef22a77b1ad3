package query

import (
	"math"
	"strings"
)

// The bucket ladder of QUERY-FORMAT §8.16, after the reference kernel
// (@jarenjs/core/src/series/bucket.js and zone.js). A width is fixed
// milliseconds or a whole number of calendar months; boundaries fall on
// UTC or on a constant offset. A named zone needs a time-zone provider
// the host injects, which jetflow has none of, so it never reaches here:
// the engine reads no zone database and no clock.

// seriesRefusal is the kernel's TypeError: the data (or, at compile
// time, the literal spec) cannot be read. The operators turn it into
// JQ2001 against the operand, or JQ0003 when the spec alone decides.
type seriesRefusal struct{ reason string }

func refuseSeries(reason string) { panic(seriesRefusal{reason}) }

// refusalReason reports the reason of a kernel refusal recovered by the
// caller; any other panic goes on unwinding.
func refusalReason(r any) (string, bool) {
	switch x := r.(type) {
	case nil:
		return "", false
	case seriesRefusal:
		return x.reason, true
	case dateRefusal:
		return x.reason, true
	}
	panic(r)
}

// span is a width taken apart: months on the calendar, or milliseconds.
type span struct {
	calendar bool
	months   float64 // the calendar amount
	width    float64 // the fixed width in milliseconds
}

func requirePositiveWhole(v float64, role string) {
	if math.IsInf(v, 0) || v != v || v != math.Trunc(v) || v <= 0 {
		refuseSeries(role + " is a positive whole number, not " + numText(v))
	}
}

// durationMs is the fixed part of a duration in milliseconds, NaN when
// it carries years or months; each product is rounded before the sum,
// as the reference adds them.
func durationMs(d duration) float64 {
	if d.years != 0 || d.months != 0 {
		return math.NaN()
	}
	ms := float64(d.weeks*msWeek) + float64(d.days*msDay) + float64(d.hours*msHour) +
		float64(d.minutes*msMinute) + float64(d.secs*msSecond)
	if d.negative {
		return -ms
	}
	return ms
}

// compileSpan reads a width ('every' in the reference's messages, for
// $rolling's width too); without a named zone a day is always fixed.
func compileSpan(every any) span {
	switch w := every.(type) {
	case float64:
		requirePositiveWhole(w, "a bucket width in milliseconds")
		return span{width: w}
	case string:
		d, ok := parseDuration(w)
		if !ok || d.negative {
			refuseSeries("'every' — '" + w + "' is not a positive ISO 8601 duration")
		}
		if d.years != 0 || d.months != 0 {
			if d.weeks != 0 || d.days != 0 || d.hours != 0 || d.minutes != 0 || d.secs != 0 {
				refuseSeries("'every' — '" + w + "' mixes calendar and fixed units; a bucket ladder" +
					" is one family, because a month and an hour do not share a boundary")
			}
			months := float64(d.years*12) + d.months
			requirePositiveWhole(months, "'every' — '"+w+"' in months")
			return span{calendar: true, months: months}
		}
		ms := durationMs(d)
		requirePositiveWhole(ms, "'every' — '"+w+"' in milliseconds")
		return span{width: ms}
	}
	refuseSeries("'every' is a positive number of milliseconds or an ISO 8601 duration")
	return span{}
}

// seriesClock is UTC or a constant offset in minutes east.
type seriesClock struct{ offset float64 }

func (c seriesClock) partsAt(ms float64) dateParts {
	local := ms + float64(c.offset*msMinute)
	z := math.Floor(local / msDay)
	p := dateParts{offset: c.offset, hasOffset: true}
	p.year, p.month, p.day = civilFromDays(z)
	p.hours, p.minutes, p.second = clockOf(local - float64(z*msDay))
	return p
}

func (c seriesClock) epochOf(p dateParts) float64 {
	p.offset, p.hasOffset = c.offset, true
	ms := epochOf(&p)
	if math.IsInf(ms, 0) || ms != ms {
		refuseSeries(describeParts(&p) + " names no instant at " + formatOffset(c.offset))
	}
	return ms
}

func padTwo(n float64) string {
	s := numText(n)
	if len(s) < 2 {
		return "0" + s
	}
	return s
}

// formatOffset is the reference's +hh:mm for a message.
func formatOffset(minutes float64) string {
	sign := "+"
	if minutes < 0 {
		sign = "-"
	}
	abs := math.Abs(minutes)
	return sign + padTwo(math.Floor(abs/60)) + ":" + padTwo(math.Mod(abs, 60))
}

// describeParts is the reference's local time for a message.
func describeParts(p *dateParts) string {
	var b strings.Builder
	b.WriteString(numText(p.year))
	b.WriteString("-" + padTwo(p.month) + "-" + padTwo(p.day))
	b.WriteString("T" + padTwo(math.Max(p.hours, 0)) + ":" + padTwo(math.Max(p.minutes, 0)) + ":" +
		padTwo(math.Floor(math.Max(p.second, 0))))
	return b.String()
}

// ladder is a compiled bucket ladder; position 0 starts at origin.
type ladder struct {
	span
	clock  seriesClock
	origin float64
	anchor dateParts // the origin on the clock, for calendar ladders
}

// compileLadder validates a width and an origin once (nil origin: local
// 1970-01-01T00:00:00 on the clock).
func compileLadder(every, origin any, clock seriesClock) *ladder {
	l := &ladder{span: compileSpan(every), clock: clock}
	if origin == nil {
		l.origin = clock.epochOf(dateParts{year: 1970, month: 1, day: 1})
	} else {
		l.origin = toEpoch(origin, true)
	}
	if l.calendar {
		l.anchor = clock.partsAt(l.origin)
	}
	return l
}

func (l *ladder) startOf(index float64) float64 {
	if !l.calendar {
		return l.origin + float64(index*l.width)
	}
	if index == 0 {
		return l.origin
	}
	return l.clock.epochOf(addUnits(l.anchor, float64(index*l.months), "month"))
}

// indexOf estimates a calendar position from the wall clock and corrects
// it against the boundaries, as the reference does.
func (l *ladder) indexOf(at float64) float64 {
	if !l.calendar {
		return math.Floor((at - l.origin) / l.width)
	}
	p := l.clock.partsAt(at)
	index := math.Floor((float64((p.year-l.anchor.year)*12) + (p.month - l.anchor.month)) / l.months)
	for guard := 0; l.startOf(index) > at; guard++ {
		if guard > 4 {
			refuseSeries("the ladder could not be walked back to " + numText(at))
		}
		index--
	}
	for guard := 0; l.startOf(index+1) <= at; guard++ {
		if guard > 4 {
			refuseSeries("the ladder could not be walked forward to " + numText(at))
		}
		index++
	}
	return index
}

func (l *ladder) floor(at float64) float64 {
	if !l.calendar {
		return l.origin + float64(math.Floor((at-l.origin)/l.width)*l.width)
	}
	return l.startOf(l.indexOf(at))
}

// toEpoch is the instant a value names: finite epoch milliseconds or an
// RFC 3339 string with a date. present is false for a member the row
// does not have (the reference's undefined).
func toEpoch(v any, present bool) float64 {
	if present {
		switch x := v.(type) {
		case float64:
			if math.IsInf(x, 0) || x != x {
				refuseSeries(numText(x) + " is not an instant")
			}
			return x
		case string:
			ms := math.NaN()
			if p, ok := parseDateParts(x); ok {
				ms = epochOf(&p)
			}
			if math.IsInf(ms, 0) || ms != ms {
				refuseSeries("'" + x + "' is not an RFC 3339 instant")
			}
			return ms
		}
	}
	refuseSeries("an instant is epoch milliseconds or an RFC 3339 string")
	return 0
}
