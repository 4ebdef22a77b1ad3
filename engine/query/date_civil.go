package query

import "math"

// Proleptic Gregorian arithmetic over the parts record, written as the
// reference writes it: float64 throughout, the same formulas in the same
// order. Every product sits inside an explicit float64 conversion, which
// the Go spec says rounds it, so no platform fuses it into a multiply-add
// and the last digit agrees with JavaScript even for absurd amounts.

const (
	msSecond = 1000
	msMinute = 60000
	msHour   = 3600000
	msDay    = 86400000
	msWeek   = 604800000
)

var monthDays = [13]float64{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func isLeapYear(y float64) bool {
	return math.Mod(y, 4) == 0 && (math.Mod(y, 100) != 0 || math.Mod(y, 400) == 0)
}

// daysInMonth is NaN for a month outside the table, as the reference's
// array read is undefined there.
func daysInMonth(y, m float64) float64 {
	if m == 2 && isLeapYear(y) {
		return 29
	}
	if m >= 0 && m <= 12 && m == math.Trunc(m) {
		return monthDays[int(m)]
	}
	return math.NaN()
}

// daysFromCivil is days since 1970-01-01 (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d float64) float64 {
	shifted := y
	if m <= 2 {
		shifted = y - 1
	}
	era := math.Floor(shifted / 400)
	yoe := shifted - float64(era*400)
	k := 9.0
	if m > 2 {
		k = -3
	}
	doy := math.Trunc((float64(153*(m+k))+2)/5) + d - 1
	doe := float64(yoe*365) + math.Trunc(yoe/4) - math.Trunc(yoe/100) + doy
	return float64(era*146097) + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z float64) (y, m, d float64) {
	shifted := z + 719468
	era := math.Floor(shifted / 146097)
	doe := shifted - float64(era*146097)
	yoe := math.Trunc((doe - math.Trunc(doe/1460) + math.Trunc(doe/36524) - math.Trunc(doe/146096)) / 365)
	doy := doe - (float64(365*yoe) + math.Trunc(yoe/4) - math.Trunc(yoe/100))
	mp := math.Trunc((float64(5*doy) + 2) / 153)
	d = doy - math.Trunc((float64(153*mp)+2)/5) + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp + -9
	}
	y = yoe + float64(era*400)
	if m <= 2 {
		y++
	} else {
		y += 0
	}
	return y, m, d
}

// isoWeekday is 1 (Monday) to 7 (Sunday).
func isoWeekday(z float64) float64 {
	w := math.Mod(math.Mod(z+4, 7)+7, 7)
	if w == 0 {
		return 7
	}
	return w
}

func dayOfYear(p *dateParts) float64 {
	return daysFromCivil(p.year, p.month, p.day) - daysFromCivil(p.year, 1, 1) + 1
}

func quarterOf(month float64) float64 { return math.Trunc((month-1)/3) + 1 }

// isoWeek is the ISO 8601 week and its week-numbering year: the week
// belongs to the year of its Thursday.
func isoWeek(p *dateParts) (year, week float64) {
	z := daysFromCivil(p.year, p.month, p.day)
	thursday := z + (4 - isoWeekday(z))
	year, _, _ = civilFromDays(thursday)
	jan1 := daysFromCivil(year, 1, 1)
	return year, math.Trunc((thursday-jan1)/7) + 1
}

func isInteger(x float64) bool { return !math.IsInf(x, 0) && x == math.Trunc(x) }

// epochOf is milliseconds since the epoch, NaN without a date. The
// reference goes through Date.UTC, whose sums are exact integers here.
func epochOf(p *dateParts) float64 {
	if p.year < 0 {
		return math.NaN()
	}
	sec, h, mi := p.second, p.hours, p.minutes
	if sec < 0 {
		sec = 0
	}
	if h < 0 {
		h = 0
	}
	if mi < 0 {
		mi = 0
	}
	whole := math.Floor(sec)
	ms := jsRound(float64((sec - whole) * 1000))
	t := float64(h*msHour) + float64(mi*msMinute) + float64(whole*msSecond) + ms
	days := daysFromCivil(p.year, p.month, p.day)
	at := float64(days*msDay) + t
	if math.Abs(at) > 8.64e15 || at != at {
		return math.NaN()
	}
	off := 0.0
	if p.hasOffset {
		off = p.offset
	}
	return at - float64(off*msMinute)
}

// clockOf splits milliseconds since midnight into clock fields.
func clockOf(rest float64) (h, m, s float64) {
	h = math.Floor(rest / msHour)
	rest -= float64(h * msHour)
	m = math.Floor(rest / msMinute)
	rest -= float64(m * msMinute)
	return h, m, rest / 1000
}

// partsFromEpoch reads an instant on the UTC clock.
func partsFromEpoch(ms float64) dateParts {
	local := ms + 0
	z := math.Floor(local / msDay)
	p := dateParts{hasOffset: true}
	p.year, p.month, p.day = civilFromDays(z)
	p.hours, p.minutes, p.second = clockOf(local - float64(z*msDay))
	return p
}

func dayMsOf(p *dateParts) float64 {
	return float64(p.hours*msHour) + float64(p.minutes*msMinute) + jsRound(float64(p.second*1000))
}

// dateRefusal is the reference kernel's TypeError: an operation the value
// has no half for, or a fraction with no exact length. The operators turn
// it into JQ2001 against the date operand.
type dateRefusal struct{ reason string }

func refuse(reason string) { panic(dateRefusal{reason}) }

func requireDate(p *dateParts, unit string) {
	if !p.hasDate() {
		refuse("'" + unit + "' needs a date half, and this value has none")
	}
}

func requireTime(p *dateParts, unit string) {
	if !p.hasTime() {
		refuse("'" + unit + "' needs a time half, and this value has none")
	}
}

// withClock keeps p's clock (or its absence) and offset on a new date.
func withClock(p *dateParts, y, m, d float64) dateParts {
	out := *p
	out.year, out.month, out.day = y, m, d
	if !p.hasTime() {
		out.hours, out.minutes, out.second = -1, -1, -1
	}
	return out
}

// unitWidth is a fixed-width unit in milliseconds, 0 for the calendar ones.
func unitWidth(unit string) float64 {
	switch unit {
	case "millisecond":
		return 1
	case "second":
		return msSecond
	case "minute":
		return msMinute
	case "hour":
		return msHour
	case "day":
		return msDay
	case "week":
		return msWeek
	}
	return 0
}

func monthsPer(unit string) float64 {
	switch unit {
	case "year":
		return 12
	case "quarter":
		return 3
	case "month":
		return 1
	}
	return 0
}

func isDateUnit(u string) bool { return monthsPer(u) != 0 || unitWidth(u) != 0 }

// addUnits shifts p by amount units, keeping its lexical form. Months
// clamp to the target month's end; a fraction must convert exactly.
func addUnits(p dateParts, amount float64, unit string) dateParts {
	if amount == 0 {
		return p
	}
	if per := monthsPer(unit); per != 0 {
		months := float64(amount * per)
		if !isInteger(months) {
			refuse("a fraction of a '" + unit + "' has no exact calendar length")
		}
		requireDate(&p, unit)
		total := (float64(p.year*12) + (p.month - 1)) + months
		y := math.Floor(total / 12)
		m := total - float64(y*12) + 1
		return withClock(&p, y, m, math.Min(p.day, daysInMonth(y, m)))
	}
	width := unitWidth(unit)
	if width == 0 {
		refuse("'" + unit + "' is not a calendar unit")
	}
	if unit == "day" || unit == "week" {
		requireDate(&p, unit)
		if isInteger(amount) {
			step := 1.0
			if unit == "week" {
				step = 7
			}
			y, m, d := civilFromDays(daysFromCivil(p.year, p.month, p.day) + float64(amount*step))
			return withClock(&p, y, m, d)
		}
	}
	requireTime(&p, unit)
	ms := jsRound(float64(amount * width))
	out := dateParts{offset: p.offset, hasOffset: p.hasOffset}
	if !p.hasDate() {
		dayMs := math.Mod(math.Mod(dayMsOf(&p)+ms, msDay)+msDay, msDay)
		out.year, out.month, out.day = -1, -1, -1
		out.hours, out.minutes, out.second = clockOf(dayMs)
		return out
	}
	moved := float64(daysFromCivil(p.year, p.month, p.day)*msDay) + dayMsOf(&p) + ms
	dz := math.Floor(moved / msDay)
	out.year, out.month, out.day = civilFromDays(dz)
	out.hours, out.minutes, out.second = clockOf(moved - float64(dz*msDay))
	return out
}

// startOf truncates p to the start of unit (weeks start on Monday).
func startOf(p dateParts, unit string) dateParts {
	out := p
	switch unit {
	case "year":
		requireDate(&p, unit)
		out.month, out.day = 1, 1
	case "quarter":
		requireDate(&p, unit)
		out.month, out.day = float64((quarterOf(p.month)-1)*3)+1, 1
	case "month":
		requireDate(&p, unit)
		out.day = 1
	case "week":
		requireDate(&p, unit)
		z := daysFromCivil(p.year, p.month, p.day)
		out.year, out.month, out.day = civilFromDays(z - (isoWeekday(z) - 1))
	case "day":
	case "hour":
		requireTime(&p, unit)
		out.minutes, out.second = 0, 0
		return out
	case "minute":
		requireTime(&p, unit)
		out.second = 0
		return out
	case "second":
		requireTime(&p, unit)
		out.second = math.Trunc(p.second)
		return out
	case "millisecond":
		requireTime(&p, unit)
		return out
	default:
		refuse("'" + unit + "' is not a calendar unit")
	}
	h := -1.0
	if p.hasTime() {
		h = 0
	}
	out.hours, out.minutes, out.second = h, h, h
	return out
}

// endOf is the unit's last instant: the next unit's start less a
// millisecond, or less a day for a value with no clock.
func endOf(p dateParts, unit string) dateParts {
	start := startOf(p, unit)
	if unit == "millisecond" {
		return start
	}
	if !p.hasDate() {
		out := dateParts{year: -1, month: -1, day: -1, offset: p.offset, hasOffset: p.hasOffset}
		out.hours, out.minutes, out.second = clockOf(dayMsOf(&start) + unitWidth(unit) - 1)
		return out
	}
	next := addUnits(start, 1, unit)
	if !p.hasTime() {
		out := dateParts{hours: -1, minutes: -1, second: -1, offset: p.offset, hasOffset: p.hasOffset}
		out.year, out.month, out.day = civilFromDays(daysFromCivil(next.year, next.month, next.day) - 1)
		return out
	}
	return addUnits(next, -1, "millisecond")
}

// addDuration applies a duration coarse to fine, so 2026-01-31 plus P1M1D
// is February's clamped 28th plus a day.
func addDuration(p dateParts, d duration, sign float64) dateParts {
	s := 1.0
	if d.negative {
		s = -1
	}
	if sign < 0 {
		s = float64(s * -1)
	}
	for _, step := range [...]struct {
		n    float64
		unit string
	}{{d.years, "year"}, {d.months, "month"}, {d.weeks, "week"}, {d.days, "day"}, {d.hours, "hour"}, {d.minutes, "minute"}, {d.secs, "second"}} {
		if step.n != 0 {
			p = addUnits(p, float64(s*step.n), step.unit)
		}
	}
	return p
}

// monthsBetween counts whole months so that adding them back to from
// never overshoots to: 2026-01-31 to 2026-02-28 is one month.
func monthsBetween(from, to *dateParts) float64 {
	months := float64((to.year-from.year)*12) + (to.month - from.month)
	if months == 0 {
		return 0
	}
	adv := addUnits(*from, months, "month")
	advDay := daysFromCivil(adv.year, adv.month, adv.day)
	toDay := daysFromCivil(to.year, to.month, to.day)
	if months > 0 && advDay > toDay {
		months--
	} else if months < 0 && advDay < toDay {
		months++
	}
	return months
}
