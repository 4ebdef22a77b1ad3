package query

import (
	"errors"
	"math"
	"testing"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/value"
)

// spanCases are widths as a spec spells them: what they read as, or the
// kernel's refusal. The conformance corpus holds the reference's answers
// for the same spellings; these pin the reader on its own.
var spanCases = []struct {
	every  any
	want   span
	refuse string
}{
	{"PT1H", span{width: msHour}, ""},
	{"PT15M", span{width: 15 * msMinute}, ""},
	{"P1D", span{width: msDay}, ""},
	{"P1W", span{width: msWeek}, ""},
	{"P1DT1H", span{width: msDay + msHour}, ""},
	{"PT1.5H", span{width: 5400000}, ""},
	{"PT0,5S", span{width: 500}, ""},
	{"P1M", span{calendar: true, months: 1}, ""},
	{"P2Y6M", span{calendar: true, months: 30}, ""},
	{"P0.5Y", span{calendar: true, months: 6}, ""},
	{60000.0, span{width: 60000}, ""},
	{"P0.5M", span{}, "'every' — 'P0.5M' in months is a positive whole number, not 0.5"},
	{"PT0.0005S", span{}, "'every' — 'PT0.0005S' in milliseconds is a positive whole number, not 0.5"},
	{"PT0S", span{}, "'every' — 'PT0S' in milliseconds is a positive whole number, not 0"},
	{"-PT1H", span{}, "'every' — '-PT1H' is not a positive ISO 8601 duration"},
	{"P1MT1H", span{}, "'every' — 'P1MT1H' mixes calendar and fixed units; a bucket ladder is one family, because a month and an hour do not share a boundary"},
	{"P1Q", span{}, "'every' — 'P1Q' is not a positive ISO 8601 duration"},
	{"", span{}, "'every' — '' is not a positive ISO 8601 duration"},
	{1.5, span{}, "a bucket width in milliseconds is a positive whole number, not 1.5"},
	{-1.0, span{}, "a bucket width in milliseconds is a positive whole number, not -1"},
	{true, span{}, "'every' is a positive number of milliseconds or an ISO 8601 duration"},
	{nil, span{}, "'every' is a positive number of milliseconds or an ISO 8601 duration"},
}

// refusalOf runs fn and returns the kernel's refusal, "" when none.
func refusalOf(fn func()) (reason string) {
	defer func() {
		reason, _ = refusalReason(recover())
	}()
	fn()
	return ""
}

func TestSeriesSpan(t *testing.T) {
	t.Parallel()
	for _, c := range spanCases {
		var got span
		reason := refusalOf(func() { got = compileSpan(c.every) })
		if reason != c.refuse || reason == "" && got != c.want {
			t.Errorf("compileSpan(%#v) = %+v, %q; want %+v, %q", c.every, got, reason, c.want, c.refuse)
		}
	}
}

// TestSeriesLadder checks bucket floors on fixed and calendar ladders,
// UTC and offset clocks, including the epoch-aligned week.
func TestSeriesLadder(t *testing.T) {
	t.Parallel()
	iso := func(s string) float64 {
		p, ok := parseDateParts(s)
		if !ok {
			t.Fatalf("bad instant %s", s)
		}
		return epochOf(&p)
	}
	for _, c := range []struct {
		every  any
		origin any
		offset float64
		at     string
		want   string
	}{
		{"PT1H", nil, 0, "2026-07-27T10:17:00Z", "2026-07-27T10:00:00Z"},
		{"P1W", nil, 0, "2026-07-27T10:17:00Z", "2026-07-23T00:00:00Z"}, // a Thursday, as 1970-01-01 was
		{"P1D", nil, 120, "2026-07-27T22:30:00Z", "2026-07-27T22:00:00Z"},
		{"P1D", 0.0, 120, "2026-07-27T22:30:00Z", "2026-07-27T00:00:00Z"},
		{"P1M", nil, 0, "2026-07-27T10:17:00Z", "2026-07-01T00:00:00Z"},
		{"P1M", nil, 120, "2026-07-31T21:30:00Z", "2026-06-30T22:00:00Z"},
		{"P1M", "2026-01-31T00:00:00Z", 0, "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z"},
		{"P1M", "2026-01-01", 120, "2026-07-31T23:30:00Z", "2026-07-01T00:00:00Z"}, // a full-date origin is UTC midnight
		{"P1Y", nil, 0, "1900-02-28T00:00:00Z", "1900-01-01T00:00:00Z"},
		{"PT1H", nil, 0, "1969-12-31T23:59:59.999Z", "1969-12-31T23:00:00Z"},
	} {
		var got float64
		reason := refusalOf(func() { got = compileLadder(c.every, c.origin, seriesClock{c.offset}).floor(iso(c.at)) })
		if reason != "" || got != iso(c.want) {
			p := partsFromEpoch(got)
			t.Errorf("floor(%s) on %v/%v/%v = %s (%q), want %s", c.at, c.every, c.origin, c.offset, formatDate(&p), reason, c.want)
		}
	}
}

func TestSeriesTolerance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in     any
		want   float64
		refuse string
	}{
		{"PT1M", 60000, ""},
		{0.0, 0, ""},
		{2.5, 2.5, ""},
		{"P1D", msDay, ""},
		{"P1M", 0, "tolerance 'P1M' is a calendar duration and has no fixed width"},
		{"-PT1S", 0, "tolerance '-PT1S' is not a non-negative ISO 8601 duration"},
		{-1.0, 0, "tolerance is a non-negative number of milliseconds or a fixed ISO 8601 duration"},
		{true, 0, "tolerance is a non-negative number of milliseconds or a fixed ISO 8601 duration"},
	} {
		var got float64
		reason := refusalOf(func() { got = requireTolerance(c.in) })
		if reason != c.refuse || reason == "" && got != c.want {
			t.Errorf("requireTolerance(%#v) = %v, %q; want %v, %q", c.in, got, reason, c.want, c.refuse)
		}
	}
}

// specCases are literal specs and the compile error each draws ("" when
// it compiles); they seed FuzzSeriesSpec.
var specCases = []struct {
	doc  string
	code fault.Code
}{
	{`{"$resample": ["$.r", {"every": "PT1H", "fill": "linear", "aggregate": "sum"}]}`, ""},
	{`{"$resample": ["$.r", {"every": "P1M", "offset": 120, "origin": "2026-01-31T00:00:00Z", "start": 0, "end": "2026-12-01"}]}`, ""},
	{`{"$resample": ["$.r", {"every": "PT1H", "at": "$.on", "value": "$.m['v'][0]"}]}`, ""},
	{`{"$resample": ["$.r", {"every": "PT1H", "at": "$..on"}]}`, fault.JQ0003},
	{`{"$resample": ["$.r", {"every": "PT1H", "zone": "Europe/Amsterdam"}]}`, fault.JQ0003},
	{`{"$resample": ["$.r", {"evry": "PT1H"}]}`, fault.JQ0003},
	{`{"$rolling": ["$.r", {"width": "P1M", "minPeriods": 2}]}`, ""},
	{`{"$rolling": ["$.r", {"width": "PT1M", "minPeriods": 0.5}]}`, fault.JQ0003},
	{`{"$asof": ["$.l", "$.r", {"by": "$.k", "tolerance": "PT1S", "direction": "nearest"}]}`, ""},
	{`{"$asof": ["$.l", "$.r", {"tolerance": "P1Y"}]}`, fault.JQ0003},
	{`{"$time-bucket": ["$.t", "P3M", null, {"offset": -300, "disambiguation": "later"}]}`, ""},
	{`{"$time-bucket": ["$.t", "P1MT1S"]}`, fault.JQ0003},
}

func TestSeriesSpecs(t *testing.T) {
	t.Parallel()
	for _, c := range specCases {
		_, err := Compile(mustJSON(t, c.doc), Options{})
		var fe *fault.Error
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: %v", c.doc, err)
		case c.code != "" && (!errors.As(err, &fe) || fe.Code != c.code):
			t.Errorf("%s: want %s, got %v", c.doc, c.code, err)
		}
	}
}

// FuzzSeriesSpec compiles arbitrary series specs and runs what compiles
// over a few rows: a refusal is fine, a panic is not, and every bucket
// floor holds its instant.
func FuzzSeriesSpec(f *testing.F) {
	for _, c := range specCases {
		f.Add(c.doc, 1767226200000.0)
	}
	for _, c := range spanCases {
		if s, ok := c.every.(string); ok {
			f.Add(`{"$time-bucket": ["$.t", "`+s+`"]}`, -1.5)
		}
	}
	f.Fuzz(func(t *testing.T, doc string, at float64) {
		d, err := value.Decode([]byte(doc), value.Limits{})
		if err != nil {
			return
		}
		q, err := Compile(d, Options{Limits: Limits{Steps: 20000, SequenceItems: 10000, Bytes: 1 << 20}})
		if err != nil {
			return
		}
		rows := []any{
			map[string]any{"at": at, "value": 1.0, "on": at, "k": "a", "m": map[string]any{"v": []any{2.0}}},
			map[string]any{"at": at + 3600000, "value": nil, "on": "2026-01-01T00:00:00Z", "k": "a"},
			map[string]any{"at": 0.0, "value": -0.5, "on": 0.0, "k": "b"},
		}
		data := map[string]any{"r": rows, "l": rows, "t": at}
		v, ok, err := q.Eval(data, nil)
		if err != nil || !ok {
			return
		}
		m, _ := d.(map[string]any)
		tb, _ := m["$time-bucket"].([]any)
		if len(tb) == 0 || tb[0] != "$.t" || math.IsInf(at, 0) || at != at || math.Abs(at) > 8e15 {
			return
		}
		if b, isNum := v.(float64); isNum && b > at {
			t.Fatalf("%s: the bucket of %v starts after it, at %v", doc, at, b)
		}
	})
}

// TestSeriesLimits checks that the series operators spend from the
// evaluation's limits: a sparse ladder of a billion buckets stops on the
// step limit instead of walking them all, and answers stop on the bytes.
func TestSeriesLimits(t *testing.T) {
	t.Parallel()
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"at": float64(i), "value": 1.0}
	}
	for _, c := range []struct {
		doc  string
		data any
		lim  Limits
	}{
		{`{"$resample": [[{"at": 0, "value": 1}, {"at": 1e15, "value": 2}], {"every": 1}]}`, nil, Limits{Steps: 100000}},
		{`{"$rolling": ["$", {"width": 10}]}`, rows, Limits{Bytes: 20000}},
		{`{"$resample": ["$", {"every": 1}]}`, rows, Limits{Bytes: 20000}},
		{`{"$asof": ["$", "$", {"leftAt": "$.at"}]}`, rows, Limits{Bytes: 20000}},
	} {
		q, err := Compile(mustJSON(t, c.doc), Options{Limits: c.lim})
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		_, _, err = q.Eval(c.data, nil)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.JQ2009 {
			t.Errorf("%s: want JQ2009, got %v", c.doc, err)
		}
	}
}
