package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSpec is wrapped by every refusal of a schedule's times (a cron
// expression, an interval, a time zone, a jitter).
var ErrSpec = errors.New("invalid schedule")

// MinEvery is the shortest interval the server fires (ADR-51).
const MinEvery = time.Second

// Spec is when a schedule fires: a cron expression read in a time zone,
// or a fixed interval. It reads expressions exactly as nats-server 2.14+
// does (server/cron.go), so that what jetflow accepts the server fires,
// and computes the same times: the next fires `schedule list` shows, and
// the fire time each fire stands for.
type Spec struct {
	cron   *cron
	every  time.Duration
	loc    *time.Location
	header string
}

// ParseSpec reads a schedule's times: exactly one of cronExpr (five
// fields, minute first; six, seconds first; or @yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly) and every (a Go
// duration of at least 1s); tz is the IANA zone of a cron expression
// ("" is UTC).
func ParseSpec(cronExpr, every, tz string) (Spec, error) {
	switch {
	case cronExpr == "" && every == "":
		return Spec{}, fmt.Errorf("%w: give a cron expression or an interval", ErrSpec)
	case cronExpr != "" && every != "":
		return Spec{}, fmt.Errorf("%w: give a cron expression or an interval, not both", ErrSpec)
	case every != "":
		if tz != "" {
			return Spec{}, fmt.Errorf("%w: a time zone applies to a cron expression, not to an interval (the server refuses it)", ErrSpec)
		}
		d, err := time.ParseDuration(every)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: interval %q: %w", ErrSpec, every, err)
		}
		if d < MinEvery || d%time.Second != 0 {
			return Spec{}, fmt.Errorf("%w: interval %q: use whole seconds, at least 1s (the server fires on whole seconds)", ErrSpec, every)
		}
		return Spec{every: d, loc: time.UTC, header: "@every " + d.String()}, nil
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: time zone %q: %w (use an IANA name such as Europe/Paris)", ErrSpec, tz, err)
		}
		loc = l
	}
	c, header, err := parseCron(cronExpr)
	if err != nil {
		return Spec{}, err
	}
	return Spec{cron: c, loc: loc, header: header}, nil
}

// Header is the Nats-Schedule value of the spec.
func (s Spec) Header() string { return s.header }

// Every is the interval of an interval spec, 0 for a cron spec.
func (s Spec) Every() time.Duration { return s.every }

// Next is the first fire after t of a schedule armed at armed (the time
// its definition was stored: an interval counts from there, on whole
// seconds, as the server counts it).
func (s Spec) Next(t, armed time.Time) time.Time {
	if s.cron == nil {
		base := armed.UTC().Round(time.Second)
		if t.Before(base) {
			return base.Add(s.every)
		}
		k := t.Sub(base)/s.every + 1
		return base.Add(k * s.every)
	}
	next, ok := s.cron.next(t.In(s.loc))
	if !ok {
		return time.Time{}
	}
	return next.UTC()
}

// Slot is the fire time a fire stands for, from the time of the
// schedule's next fire the server put on it (Nats-Schedule-Next): one
// interval before it, or the cron time before it. A fire the server
// made late (it was down when the fire was due) stands for the latest
// time due, which is what the server computes its next fire from.
func (s Spec) Slot(next time.Time) time.Time {
	if s.cron == nil {
		return next.Add(-s.every).UTC()
	}
	return s.prev(next)
}

// Align is the fire time a fire due at due stands for: for an interval,
// the latest time of the schedule's grid (armed, on whole seconds, plus
// whole intervals) at or before due. The server counts an interval from
// the fire it made, so one it made late (it was down) shifts its later
// fires off the grid; aligning keeps every run's fire time on it, so the
// runs of one schedule stay whole intervals apart and a catch-up does not
// add a time between two of them. A cron time is its own.
func (s Spec) Align(due, armed time.Time) time.Time {
	if s.cron != nil {
		return due
	}
	base := armed.UTC().Round(time.Second)
	if due.Before(base) {
		return due
	}
	return base.Add(due.Sub(base) / s.every * s.every)
}

// prev is the latest cron time before t.
func (s Spec) prev(t time.Time) time.Time {
	for _, w := range []time.Duration{2 * time.Minute, 2 * time.Hour, 50 * time.Hour, 63 * 24 * time.Hour, 800 * 24 * time.Hour, 6 * 366 * 24 * time.Hour} {
		var last time.Time
		at := t.Add(-w)
		for range 200000 {
			n, ok := s.cron.next(at.In(s.loc))
			if !ok || !n.Before(t) {
				break
			}
			last, at = n, n
		}
		if !last.IsZero() {
			return last.UTC()
		}
	}
	return t.UTC()
}

// Between are the fire times strictly between from and to, oldest first,
// at most limit of them (the latest ones when there are more).
func (s Spec) Between(from, to time.Time, limit int) []time.Time {
	var out []time.Time
	at := from
	for range 1_000_000 {
		var n time.Time
		if s.cron == nil {
			n = at.Add(s.every)
		} else {
			var ok bool
			if n, ok = s.cron.next(at.In(s.loc)); !ok {
				break
			}
		}
		if !n.Before(to) {
			break
		}
		out = append(out, n.UTC())
		if len(out) > limit {
			out = out[1:]
		}
		at = n
	}
	return out
}

// Predefined cron expressions, as the server expands them.
var predefined = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

// cron is a parsed six-field expression: one bit per allowed value, and
// starBit on a field written as '*' (which changes how the two day
// fields combine).
type cron struct {
	second, minute, hour, dom, month, dow uint64
}

const starBit = 1 << 63

type field struct {
	name     string
	min, max uint
	names    map[string]uint
}

var fields = [6]field{
	{"second", 0, 59, nil},
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, map[string]uint{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}},
	{"day of week", 0, 6, map[string]uint{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}},
}

// parseCron reads five fields (minute first: the seconds are 0), six
// (seconds first) or a predefined expression, and returns it with the
// header value the server is given (six fields, or the predefined name).
func parseCron(expr string) (*cron, string, error) {
	text := strings.TrimSpace(expr)
	header := text
	if p, ok := predefined[strings.ToLower(text)]; ok {
		header, text = strings.ToLower(text), p
	} else if strings.HasPrefix(text, "@") {
		return nil, "", fmt.Errorf("%w: cron %q: unknown predefined expression (use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)", ErrSpec, expr)
	}
	parts := strings.Fields(text)
	first := 0 // index into fields of parts[0]
	switch len(parts) {
	case 5:
		first = 1
		header = "0 " + strings.Join(parts, " ")
	case 6:
		if header == text {
			header = strings.Join(parts, " ")
		}
	default:
		return nil, "", fmt.Errorf("%w: cron %q has %d fields; give 5 (minute hour day-of-month month day-of-week) or 6 (second first)", ErrSpec, expr, len(parts))
	}
	var bits [6]uint64
	if first == 1 {
		bits[0] = 1 // second 0
	}
	for i, p := range parts {
		f := fields[first+i]
		b, err := parseField(p, f)
		if err != nil {
			return nil, "", fmt.Errorf("%w: cron %q: %s (field %d of %d) %q: %w", ErrSpec, expr, f.name, i+1, len(parts), p, err)
		}
		bits[first+i] = b
	}
	return &cron{bits[0], bits[1], bits[2], bits[3], bits[4], bits[5]}, header, nil
}

func parseField(s string, f field) (uint64, error) {
	var bits uint64
	for expr := range strings.SplitSeq(s, ",") {
		if expr == "" {
			return 0, errors.New("empty list item")
		}
		b, err := parseRange(expr, f)
		if err != nil {
			return 0, err
		}
		bits |= b
	}
	return bits, nil
}

func parseRange(expr string, f field) (uint64, error) {
	rangeAndStep := strings.Split(expr, "/")
	lowHigh := strings.Split(rangeAndStep[0], "-")
	var start, end, step uint
	var extra uint64
	var err error
	if lowHigh[0] == "*" || lowHigh[0] == "?" {
		if len(lowHigh) > 1 {
			return 0, fmt.Errorf("%q cannot start a range", lowHigh[0])
		}
		start, end, extra = f.min, f.max, starBit
	} else {
		if start, err = number(lowHigh[0], f); err != nil {
			return 0, err
		}
		switch len(lowHigh) {
		case 1:
			end = start
		case 2:
			if end, err = number(lowHigh[1], f); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("too many hyphens in %q", expr)
		}
	}
	switch len(rangeAndStep) {
	case 1:
		step = 1
	case 2:
		n, err := strconv.Atoi(rangeAndStep[1])
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("step %q is not a positive number", rangeAndStep[1])
		}
		step = uint(n)
		if len(lowHigh) == 1 {
			end = f.max // "N/step" means N-max/step
		}
		if step > 1 {
			extra = 0
		}
	default:
		return 0, fmt.Errorf("too many slashes in %q", expr)
	}
	switch {
	case start < f.min:
		return 0, fmt.Errorf("%d is below the %s's minimum %d", start, f.name, f.min)
	case end > f.max:
		return 0, fmt.Errorf("%d is above the %s's maximum %d", end, f.name, f.max)
	case start > end:
		return 0, fmt.Errorf("range %d-%d runs backwards", start, end)
	}
	var bits uint64
	for i := start; i <= end; i += step {
		bits |= 1 << i
	}
	return bits | extra, nil
}

func number(s string, f field) (uint, error) {
	if n, ok := f.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		if f.names != nil {
			return 0, fmt.Errorf("%q is neither a number %d-%d nor a name (%s)", s, f.min, f.max, nameList(f))
		}
		return 0, fmt.Errorf("%q is not a number %d-%d", s, f.min, f.max)
	}
	return uint(n), nil
}

func nameList(f field) string {
	out := make([]string, f.max-f.min+1)
	for k, v := range f.names {
		out[v-f.min] = k
	}
	return strings.Join(out, ", ")
}

// next is the first time after t (in t's location) the expression
// matches, found as the server finds it; false past five years.
func (c *cron) next(t time.Time) (time.Time, bool) {
	loc := t.Location()
	next := t.Truncate(time.Second).Add(time.Second)
	truncated := false
	yearLimit := next.Year() + 5
WRAP:
	if next.Year() > yearLimit {
		return time.Time{}, false
	}
	for 1<<uint(next.Month())&c.month == 0 {
		if !truncated {
			truncated = true
			next = time.Date(next.Year(), next.Month(), 1, 0, 0, 0, 0, loc)
		}
		if next = next.AddDate(0, 1, 0); next.Month() == time.January {
			goto WRAP
		}
	}
	for !c.dayMatches(next) {
		if !truncated {
			truncated = true
			next = time.Date(next.Year(), next.Month(), next.Day(), 0, 0, 0, 0, loc)
		}
		if next = next.AddDate(0, 0, 1); next.Day() == 1 {
			goto WRAP
		}
	}
	for 1<<uint(next.Hour())&c.hour == 0 {
		if !truncated {
			truncated = true
			next = time.Date(next.Year(), next.Month(), next.Day(), next.Hour(), 0, 0, 0, loc)
		}
		if next = next.Add(time.Hour); next.Hour() == 0 {
			goto WRAP
		}
	}
	for 1<<uint(next.Minute())&c.minute == 0 {
		if !truncated {
			truncated = true
			next = next.Truncate(time.Minute)
		}
		if next = next.Add(time.Minute); next.Minute() == 0 {
			goto WRAP
		}
	}
	for 1<<uint(next.Second())&c.second == 0 {
		if !truncated {
			truncated = true
			next = next.Truncate(time.Second)
		}
		if next = next.Add(time.Second); next.Second() == 0 {
			goto WRAP
		}
	}
	return next, true
}

func (c *cron) dayMatches(t time.Time) bool {
	domMatch := 1<<uint(t.Day())&c.dom > 0
	dowMatch := 1<<uint(t.Weekday())&c.dow > 0
	if c.dom&starBit > 0 || c.dow&starBit > 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}
