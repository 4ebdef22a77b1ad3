package query

import (
	"math"
	"strings"
	"testing"
)

// dateParseCases are lexical forms with the parts the reference reads
// from them (want.year -1: no date half; hours -1: no time half). ok
// false: not an RFC 3339 value. They also seed FuzzDateParse.
var dateParseCases = []struct {
	in   string
	ok   bool
	want dateParts
}{
	{"2026-07-27T14:30:05.5+02:00", true, dateParts{2026, 7, 27, 14, 30, 5.5, 120, true}},
	{"2026-07-27t14:30:05z", true, dateParts{2026, 7, 27, 14, 30, 5, 0, true}},
	{"2026-07-27 14:30:05-05:30", true, dateParts{2026, 7, 27, 14, 30, 5, -330, true}},
	{"2026-07-27\u300014:30:05Z", true, dateParts{2026, 7, 27, 14, 30, 5, 0, true}},
	{"2026-07-27ZT14:30:05Z", true, dateParts{2026, 7, 27, 14, 30, 5, 0, true}},
	{"2026-07-27", true, dateParts{2026, 7, 27, -1, -1, -1, 0, false}},
	{"2026-07-27Z", true, dateParts{2026, 7, 27, -1, -1, -1, 0, true}},
	{"0000-02-29", true, dateParts{0, 2, 29, -1, -1, -1, 0, false}},
	{"14:30:05.123456-00:00", true, dateParts{-1, -1, -1, 14, 30, 5.123456, 0, true}},
	{"23:59:60Z", true, dateParts{-1, -1, -1, 23, 59, 60, 0, true}},
	{"00:59:60+01:00", true, dateParts{-1, -1, -1, 0, 59, 60, 60, true}},
	{"47:59:60Z", true, dateParts{-1, -1, -1, 47, 59, 60, 0, true}},
	{"1900-02-29", false, dateParts{}},
	{"2026-04-31", false, dateParts{}},
	{"2026-13-01", false, dateParts{}},
	{"2026-7-27", false, dateParts{}},
	{"2026-07-27T14:30:05", false, dateParts{}},
	{"2026-07-27TT14:30:05Z", false, dateParts{}},
	{"2026-07-27Z14:30:05Z", false, dateParts{}},
	{"14:30:05.1234567Z", false, dateParts{}},
	{"14:30:05.Z", false, dateParts{}},
	{"24:00:00Z", false, dateParts{}},
	{"22:59:60Z", false, dateParts{}},
	{"14:30:05+24:00", false, dateParts{}},
	{"14:30:05+0100", false, dateParts{}},
	{"", false, dateParts{}},
	{"T", false, dateParts{}},
	{"é2026-07-27", false, dateParts{}},
}

func sameNumber(a, b float64) bool { return a == b || (a != a && b != b) }

func sameParts(a, b dateParts) bool {
	return sameNumber(a.year, b.year) && sameNumber(a.month, b.month) && sameNumber(a.day, b.day) &&
		sameNumber(a.hours, b.hours) && sameNumber(a.minutes, b.minutes) && sameNumber(a.second, b.second) &&
		a.hasOffset == b.hasOffset && (!a.hasOffset || a.offset == b.offset)
}

func TestParseDateParts(t *testing.T) {
	t.Parallel()
	for _, c := range dateParseCases {
		got, ok := parseDateParts(c.in)
		if ok != c.ok || ok && !sameParts(got, c.want) {
			t.Errorf("parseDateParts(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

var durationCases = []struct {
	in          string
	strict, ok  bool
	want        duration
	description string
}{
	{"P1Y2M3DT4H5M6S", true, true, duration{false, 1, 2, 0, 3, 4, 5, 6}, "every designator"},
	{"P1W", true, true, duration{weeks: 1}, "weeks alone"},
	{"PT1.5S", true, true, duration{secs: 1.5}, "fractional seconds"},
	{"PT1.5H", false, true, duration{hours: 1.5}, "a fraction off the seconds is lenient only"},
	{"P1,5D", false, true, duration{days: 1.5}, "a decimal comma"},
	{"-P1D", false, true, duration{negative: true, days: 1}, "a sign"},
	{"P0D", true, true, duration{}, "zero"},
	{"P1Y2W", false, false, duration{}, "weeks mixed with years"},
	{"P1D1Y", false, false, duration{}, "out of order"},
	{"PT", false, false, duration{}, "no component"},
	{"P1DT", false, false, duration{}, "a T with nothing after it"},
	{"P", false, false, duration{}, "bare P"},
	{"p1d", false, false, duration{}, "lower case"},
	{"PT1H1H", false, false, duration{}, "a designator twice"},
}

func TestDurations(t *testing.T) {
	t.Parallel()
	for _, c := range durationCases {
		if got := isDuration(c.in); got != c.strict {
			t.Errorf("%s: isDuration(%q) = %v, want %v", c.description, c.in, got, c.strict)
		}
		got, ok := parseDuration(c.in)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: parseDuration(%q) = %+v, %v; want %+v, %v", c.description, c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestToFixed6 pins JavaScript's toFixed(6), whose exact ties round away
// from zero where strconv rounds to even.
func TestToFixed6(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0.0078125, "0.007813"},
		{0.0234375, "0.023438"},
		{-0.0078125, "-0.007813"},
		{5.9999999, "6.000000"},
		{0.1, "0.100000"},
		{math.Copysign(0, -1), "0.000000"},
		{-1e-9, "-0.000000"},
		{1e21, "1e+21"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{0.9999995, "1.000000"},
	} {
		if got := toFixed6(c.in); got != c.want {
			t.Errorf("toFixed6(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzDateParse checks the lexical forms on arbitrary strings: the three
// forms are disjoint, parsing succeeds exactly on them, and the canonical
// spelling of a parsed value parses back to the same parts (a full-date
// less its optional Z). The lenient
// duration reader accepts everything the strict one does.
func FuzzDateParse(f *testing.F) {
	for _, c := range dateParseCases {
		f.Add(c.in)
	}
	for _, c := range durationCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, tm, dt := isDateOnly(s), isTimeOnly(s), isDateTime(s)
		n := 0
		for _, b := range []bool{d, tm, dt} {
			if b {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("%q is in %d lexical forms", s, n)
		}
		p, ok := parseDateParts(s)
		if ok != (n == 1) {
			t.Fatalf("parseDateParts(%q) ok=%v, but the predicates say %v", s, ok, n == 1)
		}
		if ok {
			if !p.hasTime() {
				p.hasOffset = false // a rendered full-date drops its Z, as the reference's does
			}
			canon := formatDate(&p)
			q, ok := parseDateParts(canon)
			if !ok || !sameParts(p, q) {
				t.Fatalf("%q renders as %q, which parses to %+v, %v; want %+v", s, canon, q, ok, p)
			}
		}
		if isDuration(s) {
			if _, ok := parseDuration(s); !ok {
				t.Fatalf("%q is a strict duration the lenient reader refuses", s)
			}
		}
	})
}

// datePatternCases render 2026-07-05T09:03:07.045+05:30 (reason "": the
// pattern compiles); they also seed FuzzDatePattern.
var datePatternCases = []struct {
	pattern, want, reason string
}{
	{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2026-07-05T09:03:07.045+05:30", ""},
	{"yy y M d H h m s S", "26 2026 7 5 9 9 3 7 0", ""},
	{"DDD D ww w Q E XX X", "186 186 27 27 3 7 +0530 +05:30", ""},
	{"yyyyy SSSS EE", "20262026 0450 77", ""},
	{"'Week' w 'of' yyyy", "Week 27 of 2026", ""},
	{"''yy'' 'it''s'", "'26' its", ""},
	{"é ✓ [yyyy]", "é ✓ [2026]", ""},
	{"", "", ""},
	{"'MMMM a'", "MMMM a", ""},
	{"dd MMMM", "", "the 'MMMM' token needs a 'months' names provider (@jarenjs/core/dates is locale-free by design)"},
	{"EEE", "", "the 'EEE' token needs a 'weekdaysShort' names provider (@jarenjs/core/dates is locale-free by design)"},
	{"h a", "", "the 'a' token needs a 'meridiem' names provider (@jarenjs/core/dates is locale-free by design)"},
	{"yyyy 'T", "", "unterminated quoted literal in date pattern 'yyyy 'T'"},
}

func TestDatePattern(t *testing.T) {
	t.Parallel()
	p, _ := parseDateParts("2026-07-05T09:03:07.045+05:30")
	for _, c := range datePatternCases {
		format, perr := compileDatePattern(c.pattern)
		switch {
		case c.reason != "":
			if perr == nil || perr.reason != c.reason {
				t.Errorf("compileDatePattern(%q) error %v, want %q", c.pattern, perr, c.reason)
			}
		case perr != nil:
			t.Errorf("compileDatePattern(%q): %s", c.pattern, perr.reason)
		default:
			if got := format(&p); got != c.want {
				t.Errorf("pattern %q renders %q, want %q", c.pattern, got, c.want)
			}
		}
	}
}

// FuzzDatePattern compiles arbitrary patterns: a pattern fails only for
// an unmatched quote or a name token, and a compiled one renders every
// lexical form (including the halves a value lacks) without panicking.
func FuzzDatePattern(f *testing.F) {
	for _, c := range datePatternCases {
		f.Add(c.pattern)
	}
	values := []string{"2026-07-05T09:03:07.045+05:30", "0000-01-01", "23:59:60.5-00:00", "9999-12-31Z"}
	f.Fuzz(func(t *testing.T, pattern string) {
		format, perr := compileDatePattern(pattern)
		if perr != nil {
			if !strings.Contains(perr.reason, "unterminated") && !strings.Contains(perr.reason, "names provider") {
				t.Fatalf("pattern %q refused for %q", pattern, perr.reason)
			}
			return
		}
		for _, v := range values {
			p, _ := parseDateParts(v)
			_ = format(&p)
		}
	})
}
