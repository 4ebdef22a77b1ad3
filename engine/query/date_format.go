package query

import (
	"math"
	"strconv"
	"strings"

	"github.com/jetflow/jetflow/engine/value"
)

// Rendering of §8.13: the canonical RFC 3339 spelling every date-producing
// operator emits, and $date-format's LDML patterns. Fields are rendered
// as JavaScript's String(n) renders them, so a value the reference spells
// oddly (a year past 9999 after arithmetic) is spelled the same here.

func numText(n float64) string {
	if n == math.Trunc(n) && math.Abs(n) < 1e15 {
		return strconv.FormatInt(int64(n), 10) // -0 included: String(-0) is "0"
	}
	return value.NumberString(n)
}

// smallInt is n as an int when it is a whole number in [0, 10000).
func smallInt(n float64) (int, bool) {
	if n >= 0 && n < 10000 && n == math.Trunc(n) {
		return int(n), true
	}
	return 0, false
}

// appendD2 is the reference's D2: a leading zero below 10, whatever the
// number is (so -1 renders "0-1").
func appendD2(b []byte, n float64) []byte {
	if k, ok := smallInt(n); ok && k < 100 {
		return append(b, byte('0'+k/10), byte('0'+k%10))
	}
	if n < 10 {
		b = append(b, '0')
	}
	return append(b, numText(n)...)
}

func d3(n float64) string {
	switch {
	case n < 10:
		return "00" + numText(n)
	case n < 100:
		return "0" + numText(n)
	}
	return numText(n)
}

// appendYear is the reference's yyyy: the magnitude, zero-padded to four.
func appendYear(b []byte, y float64) []byte {
	if y < 0 {
		y = -y
	}
	if k, ok := smallInt(y); ok {
		return append(b, byte('0'+k/1000), byte('0'+k/100%10), byte('0'+k/10%10), byte('0'+k%10))
	}
	s := numText(y)
	for i := len(s); i < 4; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// toFixed6 is JavaScript's x.toFixed(6): exact decimal rounding with a
// tie going away from zero (strconv would round it to even), and String(x)
// from 1e21 up.
func toFixed6(x float64) string {
	if x != x {
		return "NaN"
	}
	if math.Abs(x) >= 1e21 {
		return numText(x)
	}
	sign := ""
	if x < 0 {
		sign = "-"
	}
	x = math.Abs(x) // -0 has no sign in JavaScript's rendering
	// x*10^6 ends in exactly .5 only when x*128 is an odd integer; then
	// seven decimals are exact and the last one is a 5 to round up
	if m := float64(x * 128); m == math.Trunc(m) && math.Mod(m, 2) == 1 {
		s := strconv.FormatFloat(x, 'f', 7, 64)
		return sign + incrementDecimal(s[:len(s)-1])
	}
	return sign + strconv.FormatFloat(x, 'f', 6, 64)
}

// incrementDecimal adds one unit in the last place of a decimal string.
func incrementDecimal(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case '.':
			continue
		case '9':
			b[i] = '0'
		default:
			b[i]++
			return string(b)
		}
	}
	return "1" + string(b)
}

// fractionDigits is the reference's toFixed(6).slice(-6).
func fractionDigits(sec float64) string {
	s := toFixed6(sec)
	if len(s) > 6 {
		s = s[len(s)-6:]
	}
	return s
}

// appendOffset renders minutes east of UTC as Z, +HH:MM or +HHMM.
func appendOffset(b []byte, p *dateParts, colon, zForUTC bool) []byte {
	if !p.hasOffset {
		return b
	}
	if p.offset == 0 && zForUTC {
		return append(b, 'Z')
	}
	sign, abs := byte('+'), p.offset
	if p.offset < 0 {
		sign, abs = '-', -p.offset
	}
	b = appendD2(append(b, sign), math.Trunc(abs/60))
	if colon {
		b = append(b, ':')
	}
	return appendD2(b, math.Mod(abs, 60))
}

// formatDate renders p in the lexical form it carries: a full-date when it
// has no clock, a full-time when it has no calendar (the reference tests
// year < 0, so a year driven negative by arithmetic renders as a time),
// otherwise a date-time; a fraction of a second only when non-zero, with
// no trailing zeros.
func formatDate(p *dateParts) string {
	var buf [48]byte
	b := buf[:0]
	if p.hours < 0 || !(p.year < 0) {
		b = appendYear(b, p.year)
		b = appendD2(append(b, '-'), p.month)
		b = appendD2(append(b, '-'), p.day)
		if p.hours < 0 {
			return string(b)
		}
		b = append(b, 'T')
	}
	b = appendD2(b, p.hours)
	b = appendD2(append(b, ':'), p.minutes)
	b = appendD2(append(b, ':'), math.Trunc(p.second))
	if frac := p.second - math.Trunc(p.second); frac != 0 {
		if digits := strings.TrimRight(fractionDigits(p.second), "0"); digits != "" {
			b = append(append(b, '.'), digits...)
		}
	}
	return string(appendOffset(b, p, true, true))
}

// ---- $date-format patterns

// dateStep appends one token's rendering of p.
type dateStep func(b []byte, p *dateParts) []byte

func numStep(field func(p *dateParts) float64) dateStep {
	return func(b []byte, p *dateParts) []byte { return append(b, numText(field(p))...) }
}

func d2Step(field func(p *dateParts) float64) dateStep {
	return func(b []byte, p *dateParts) []byte { return appendD2(b, field(p)) }
}

func offsetStep(colon, zForUTC bool) dateStep {
	return func(b []byte, p *dateParts) []byte { return appendOffset(b, p, colon, zForUTC) }
}

func fractionStep(n int) dateStep {
	return func(b []byte, p *dateParts) []byte { return append(b, prefix(fractionDigits(p.second), n)...) }
}

var (
	fieldYear    = func(p *dateParts) float64 { return p.year }
	fieldMonth   = func(p *dateParts) float64 { return p.month }
	fieldDay     = func(p *dateParts) float64 { return p.day }
	fieldHours   = func(p *dateParts) float64 { return p.hours }
	fieldHour12  = func(p *dateParts) float64 { return hour12(p.hours) }
	fieldMinutes = func(p *dateParts) float64 { return p.minutes }
	fieldSecond  = func(p *dateParts) float64 { return math.Trunc(p.second) }
	fieldWeek    = func(p *dateParts) float64 { _, w := isoWeek(p); return w }
)

var dateTokens = map[string]dateStep{
	"yyyy": func(b []byte, p *dateParts) []byte { return appendYear(b, p.year) },
	"yy":   d2Step(func(p *dateParts) float64 { return math.Mod(math.Mod(p.year, 100)+100, 100) }),
	"y":    numStep(fieldYear),
	"MM":   d2Step(fieldMonth),
	"M":    numStep(fieldMonth),
	"dd":   d2Step(fieldDay),
	"d":    numStep(fieldDay),
	"E":    numStep(func(p *dateParts) float64 { return isoWeekday(daysFromCivil(p.year, p.month, p.day)) }),
	"HH":   d2Step(fieldHours),
	"H":    numStep(fieldHours),
	"hh":   d2Step(fieldHour12),
	"h":    numStep(fieldHour12),
	"mm":   d2Step(fieldMinutes),
	"m":    numStep(fieldMinutes),
	"ss":   d2Step(fieldSecond),
	"s":    numStep(fieldSecond),
	"SSS":  fractionStep(3),
	"S":    fractionStep(1),
	"XXX":  offsetStep(true, true),
	"XX":   offsetStep(false, true),
	"X":    offsetStep(true, false),
	"DDD":  func(b []byte, p *dateParts) []byte { return append(b, d3(dayOfYear(p))...) },
	"D":    numStep(dayOfYear),
	"ww":   d2Step(fieldWeek),
	"w":    numStep(fieldWeek),
	"Q":    numStep(func(p *dateParts) float64 { return quarterOf(p.month) }),
}

// nameTokens need locale names the reference does not carry.
var nameTokens = map[string]string{
	"MMMM": "months", "MMM": "monthsShort", "EEEE": "weekdays", "EEE": "weekdaysShort", "a": "meridiem",
}

func hour12(h float64) float64 {
	if h := math.Mod(h, 12); h != 0 {
		return h
	}
	return 12
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// patternError is a pattern the reference's compiler rejects.
type patternError struct{ reason string }

// compileDatePattern scans an LDML pattern once: the longest token wins,
// quoted text and unknown characters are literal, and two quotes in a
// row are one quote.
func compileDatePattern(pattern string) (func(p *dateParts) string, *patternError) {
	var steps []dateStep
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			text := lit.String()
			steps = append(steps, func(b []byte, _ *dateParts) []byte { return append(b, text...) })
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); {
		if pattern[i] == '\'' {
			if i+1 < len(pattern) && pattern[i+1] == '\'' {
				lit.WriteByte('\'')
				i += 2
				continue
			}
			end := strings.IndexByte(pattern[i+1:], '\'')
			if end < 0 {
				return nil, &patternError{"unterminated quoted literal in date pattern '" + pattern + "'"}
			}
			lit.WriteString(pattern[i+1 : i+1+end])
			i += end + 2
			continue
		}
		matched := ""
		for n := 4; n >= 1; n-- {
			if i+n > len(pattern) {
				continue
			}
			c := pattern[i : i+n]
			if _, ok := dateTokens[c]; ok {
				matched = c
				break
			}
			if _, ok := nameTokens[c]; ok {
				matched = c
				break
			}
		}
		if matched == "" {
			lit.WriteByte(pattern[i])
			i++
			continue
		}
		if need, ok := nameTokens[matched]; ok {
			return nil, &patternError{"the '" + matched + "' token needs a '" + need +
				"' names provider (@jarenjs/core/dates is locale-free by design)"}
		}
		flush()
		steps = append(steps, dateTokens[matched])
		i += len(matched)
	}
	flush()
	return func(p *dateParts) string {
		var buf [64]byte
		b := buf[:0]
		for _, s := range steps {
			b = s(b, p)
		}
		return string(b)
	}, nil
}
