package query

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jetflow/jetflow/engine/value"
)

// Dates of QUERY-FORMAT §8.13 are RFC 3339 strings read lexically: a
// parts record holds the fields the string spells, in its own offset.
// The reference keeps them as JavaScript numbers and marks a half the
// value lacks with -1 (a full-date has no hours, a full-time no year);
// the record mirrors that, as float64, so that every later step takes the
// same branches and rounds the same way as the reference.
type dateParts struct {
	year, month, day       float64
	hours, minutes, second float64 // second carries the fraction
	offset                 float64 // minutes east of UTC
	hasOffset              bool    // false only for a bare full-date
}

func (p *dateParts) hasDate() bool { return p.year >= 0 }
func (p *dateParts) hasTime() bool { return p.hours >= 0 }

// twoDigits reads two ASCII digits at i, or -1.
func twoDigits(s string, i int) int {
	if i < 0 || i+1 >= len(s) {
		return -1
	}
	a, b := int(s[i])-'0', int(s[i+1])-'0'
	if a < 0 || a > 9 || b < 0 || b > 9 {
		return -1
	}
	return a*10 + b
}

func byteAt(s string, i int) byte {
	if i < 0 || i >= len(s) {
		return 0
	}
	return s[i]
}

// dateRegion reports whether s[from:to] is a full-date, YYYY-MM-DD with
// an optional trailing z or Z (the reference accepts one).
func dateRegion(s string, from, to int) bool {
	end := to
	if c := byteAt(s, end-1); c == 'z' || c == 'Z' {
		end--
	}
	if end-from != 10 {
		return false
	}
	y1, y2 := twoDigits(s, from), twoDigits(s, from+2)
	if y1 < 0 || y2 < 0 || s[from+4] != '-' {
		return false
	}
	m := twoDigits(s, from+5)
	if m < 0 || s[from+7] != '-' {
		return false
	}
	d := twoDigits(s, from+8)
	if d < 0 {
		return false
	}
	y := float64(y1*100 + y2)
	return m >= 1 && m <= 12 && d >= 1 && float64(d) <= daysInMonth(y, float64(m))
}

// timeInRange is the reference's field check. A second of 60 is accepted
// only where UTC reads 23:59 — and then the hour and minute are not
// range-checked, so "47:59:60Z" passes, as it does in the reference.
func timeInRange(h, m, sec, tzh, tzm, sign int) bool {
	if tzh < 0 || tzh > 23 || tzm < 0 || tzm > 59 {
		return false
	}
	if sec == 60 {
		uh, um := h-sign*tzh, m-sign*tzm
		for um < 0 {
			um += 60
			uh--
		}
		for um >= 60 {
			um -= 60
			uh++
		}
		for uh < 0 {
			uh += 24
		}
		return uh%24 == 23 && um == 59
	}
	return h >= 0 && h <= 23 && m >= 0 && m <= 59 && sec >= 0 && sec <= 59
}

// timeRegion reports whether s[from:] is a full-time: HH:MM:SS, an
// optional fraction of 1-6 digits, then z, Z or ±HH:MM ending the string.
func timeRegion(s string, from int) bool {
	h := twoDigits(s, from)
	if h < 0 || byteAt(s, from+2) != ':' {
		return false
	}
	m := twoDigits(s, from+3)
	if m < 0 || byteAt(s, from+5) != ':' {
		return false
	}
	sec := twoDigits(s, from+6)
	if sec < 0 {
		return false
	}
	i := from + 8
	if byteAt(s, i) == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if n := i - start; n < 1 || n > 6 {
			return false
		}
	}
	c := byteAt(s, i)
	if c == 'z' || c == 'Z' {
		return i+1 == len(s) && timeInRange(h, m, sec, 0, 0, 1)
	}
	if c != '+' && c != '-' || i+6 != len(s) {
		return false
	}
	th := twoDigits(s, i+1)
	if th < 0 || s[i+3] != ':' {
		return false
	}
	tm := twoDigits(s, i+4)
	if tm < 0 {
		return false
	}
	sign := 1
	if c == '-' {
		sign = -1
	}
	return timeInRange(h, m, sec, th, tm, sign)
}

// isDateTimeSeparator is the reference's set between the two halves: t,
// T, and every character of JavaScript's \s class.
func isDateTimeSeparator(r rune) bool {
	return r == 't' || r == 'T' || value.IsJSSpace(r)
}

// dateTimeSplit returns the byte offsets of the one separator and of the
// time half, or -1 when the string has none or more than one.
func dateTimeSplit(s string) (sep, timeAt int) {
	sep = -1
	for i, r := range s {
		if isDateTimeSeparator(r) {
			if sep != -1 {
				return -1, -1
			}
			sep, timeAt = i, i+utf8.RuneLen(r)
		}
	}
	return sep, timeAt
}

func isDateOnly(s string) bool { return dateRegion(s, 0, len(s)) }
func isTimeOnly(s string) bool { return timeRegion(s, 0) }

func isDateTime(s string) bool {
	sep, at := dateTimeSplit(s)
	return sep != -1 && dateRegion(s, 0, sep) && timeRegion(s, at)
}

func readDate(s string, from int) (y, m, d float64) {
	return float64(twoDigits(s, from)*100 + twoDigits(s, from+2)), float64(twoDigits(s, from+5)), float64(twoDigits(s, from+8))
}

// readTime reads a validated full-time; the fraction is added as the
// reference adds Number(".ddd") to the whole seconds.
func readTime(s string, from int, p *dateParts) {
	p.hours = float64(twoDigits(s, from))
	p.minutes = float64(twoDigits(s, from+3))
	p.second = float64(twoDigits(s, from+6))
	i := from + 8
	if byteAt(s, i) == '.' {
		start := i
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac, _ := strconv.ParseFloat(s[start:i], 64)
		p.second += frac
	}
	p.hasOffset = true
	if c := byteAt(s, i); c == '+' || c == '-' {
		mag := float64(twoDigits(s, i+1)*60 + twoDigits(s, i+4))
		if c == '-' {
			mag = -mag
		}
		p.offset = mag
	}
}

// parseDateParts decomposes a full-date, full-time or date-time string;
// ok is false for anything else.
func parseDateParts(s string) (p dateParts, ok bool) {
	if sep, at := dateTimeSplit(s); sep != -1 && dateRegion(s, 0, sep) && timeRegion(s, at) {
		p.year, p.month, p.day = readDate(s, 0)
		readTime(s, at, &p)
		return p, true
	}
	if isDateOnly(s) {
		p.year, p.month, p.day = readDate(s, 0)
		p.hours, p.minutes, p.second = -1, -1, -1
		c := s[len(s)-1]
		p.hasOffset = c == 'z' || c == 'Z'
		return p, true
	}
	if isTimeOnly(s) {
		p.year, p.month, p.day = -1, -1, -1
		readTime(s, 0, &p)
		return p, true
	}
	return p, false
}

// ---- durations

var (
	durDateRE = regexp.MustCompile(`^([0-9]+Y)?([0-9]+M)?([0-9]+D)?$`)
	durTimeRE = regexp.MustCompile(`^([0-9]+H)?([0-9]+M)?([0-9]+(?:\.[0-9]+)?S)?$`)
	durAnyRE  = regexp.MustCompile(`[0-9]+[YMD]`)
	durAnyTRE = regexp.MustCompile(`[0-9]+[HMS]`)
)

// isDuration is the strict RFC 3339 Appendix A check behind $is-duration.
func isDuration(s string) bool {
	if len(s) < 2 || s[0] != 'P' {
		return false
	}
	rest := s[1:]
	if strings.HasSuffix(rest, "W") {
		w := rest[:len(rest)-1]
		return w != "" && strings.Trim(w, "0123456789") == ""
	}
	datePart, timePart, hasT := strings.Cut(rest, "T")
	if datePart == "" && timePart == "" || hasT && timePart == "" {
		return false
	}
	if datePart != "" && (!durDateRE.MatchString(datePart) || !durAnyRE.MatchString(datePart)) {
		return false
	}
	if timePart != "" && (!durTimeRE.MatchString(timePart) || !durAnyTRE.MatchString(timePart)) {
		return false
	}
	return true
}

// duration is a decomposed ISO 8601 duration; the fields are magnitudes.
type duration struct {
	negative                                         bool
	years, months, weeks, days, hours, minutes, secs float64
}

// parseDuration is the reference's lenient reader behind $date-add: a
// superset of isDuration that allows a leading '-' and fractions ('.' or
// ',') on any designator.
func parseDuration(s string) (duration, bool) {
	var d duration
	if len(s) < 3 {
		return d, false
	}
	i := 0
	if s[0] == '-' {
		d.negative = true
		i++
	}
	if s[i] != 'P' {
		return d, false
	}
	i++
	inTime, seenAny, lastRank := false, false, -1
	for i < len(s) {
		if s[i] == 'T' {
			if inTime {
				return d, false
			}
			inTime, lastRank = true, -1
			i++
			if i >= len(s) {
				return d, false
			}
			continue
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return d, false
		}
		if i < len(s) && (s[i] == '.' || s[i] == ',') {
			i++
			fs := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i == fs {
				return d, false
			}
		}
		if i >= len(s) {
			return d, false
		}
		field, rank := durationField(&d, s[i], inTime)
		if field == nil || rank <= lastRank {
			return d, false
		}
		lastRank = rank
		*field, _ = strconv.ParseFloat(strings.Replace(s[start:i], ",", ".", 1), 64)
		i++
		seenAny = true
	}
	if !seenAny || d.weeks != 0 && (d.years != 0 || d.months != 0 || d.days != 0) {
		return d, false
	}
	return d, true
}

// durationField maps a designator to its field and its coarse-to-fine
// rank; M is months before the T and minutes after it.
func durationField(d *duration, c byte, inTime bool) (*float64, int) {
	if inTime {
		switch c {
		case 'H':
			return &d.hours, 0
		case 'M':
			return &d.minutes, 1
		case 'S':
			return &d.secs, 2
		}
		return nil, 0
	}
	switch c {
	case 'Y':
		return &d.years, 0
	case 'M':
		return &d.months, 1
	case 'W':
		return &d.weeks, 2
	case 'D':
		return &d.days, 3
	}
	return nil, 0
}
