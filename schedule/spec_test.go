package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/subjects"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParseSpecRefusesNamingTheField: every refusal wraps ErrSpec and
// names what is wrong, a cron field by its name and position.
func TestParseSpecRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cron, every, tz, want string }{
		{"0 2 * * x", "", "", `day of week (field 5 of 5) "x": "x" is neither a number 0-6 nor a name (sun, mon, tue, wed, thu, fri, sat)`},
		{"61 * * * *", "", "", `minute (field 1 of 5) "61": 61 is above the minute's maximum 59`},
		{"0 0 25 * * *", "", "", `hour (field 3 of 6) "25"`},
		{"* * 0 * *", "", "", `day of month (field 3 of 5) "0": 0 is below the day of month's minimum 1`},
		{"* * * 13 *", "", "", `month (field 4 of 5)`},
		{"*/0 * * * *", "", "", `step "0" is not a positive number`},
		{"5-1 * * * *", "", "", "range 5-1 runs backwards"},
		{"* * * *", "", "", "has 4 fields"},
		{"@fortnightly", "", "", "unknown predefined expression"},
		{"", "", "", "give a cron expression or an interval"},
		{"* * * * *", "1s", "", "not both"},
		{"", "500ms", "", "at least 1s"},
		{"", "1500ms", "", "whole seconds"},
		{"", "soon", "", `interval "soon"`},
		{"", "1s", "Europe/Paris", "not to an interval"},
		{"0 * * * *", "", "Mars/Olympus", `time zone "Mars/Olympus"`},
	} {
		_, err := ParseSpec(tc.cron, tc.every, tc.tz)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q, %q, %q) = %v, want ErrSpec naming %q", tc.cron, tc.every, tc.tz, err, tc.want)
		}
	}
}

// TestCronTimes: next fires, the fire time a fire stands for (from the
// next time the server puts on it) and the times in between, in UTC and
// in a zone with daylight saving.
func TestCronTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cron, tz, after, next, header string
	}{
		{"0 * * * *", "", "2026-12-02T10:43:24Z", "2026-12-02T11:00:00Z", "0 0 * * * *"},
		{"*/15 9-17 * * mon-fri", "", "2026-12-04T17:50:00Z", "2026-12-07T09:00:00Z", "0 */15 9-17 * * mon-fri"},
		{"0 2 * * *", "Europe/Paris", "2026-12-02T10:00:00Z", "2026-12-03T01:00:00Z", "0 0 2 * * *"},
		{"0 2 * * *", "Europe/Paris", "2026-07-02T10:00:00Z", "2026-07-03T00:00:00Z", "0 0 2 * * *"},
		{"@hourly", "", "2026-12-02T10:00:00Z", "2026-12-02T11:00:00Z", "@hourly"},
		{"0 0 1 1 *", "", "2026-12-02T10:00:00Z", "2027-01-01T00:00:00Z", "0 0 0 1 1 *"},
		// Both day fields restricted: either matches (the 13th, a Friday).
		{"0 0 13 * fri", "", "2026-12-02T00:00:00Z", "2026-12-04T00:00:00Z", "0 0 0 13 * fri"},
		{"30 */2 * * * *", "", "2026-12-02T10:00:31Z", "2026-12-02T10:02:30Z", "30 */2 * * * *"},
	} {
		s, err := ParseSpec(tc.cron, "", tc.tz)
		if err != nil {
			t.Fatalf("%s: %v", tc.cron, err)
		}
		if s.Header() != tc.header {
			t.Errorf("%s: header %q, want %q", tc.cron, s.Header(), tc.header)
		}
		after, want := mustTime(t, tc.after), mustTime(t, tc.next)
		next := s.Next(after, time.Time{})
		if !next.Equal(want) {
			t.Errorf("%s in %q after %s: next %s, want %s", tc.cron, tc.tz, tc.after, next, want)
			continue
		}
		// The fire at next carries the time after it; it stands for next.
		if slot := s.Slot(s.Next(next, time.Time{})); !slot.Equal(next) {
			t.Errorf("%s: the fire before %s stands for %s, want %s", tc.cron, s.Next(next, time.Time{}), slot, next)
		}
	}
	s, err := ParseSpec("0 * * * *", "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Between(mustTime(t, "2026-12-02T10:00:00Z"), mustTime(t, "2026-12-02T14:00:00Z"), 100)
	if len(got) != 3 || !got[0].Equal(mustTime(t, "2026-12-02T11:00:00Z")) || !got[2].Equal(mustTime(t, "2026-12-02T13:00:00Z")) {
		t.Errorf("hours strictly between 10:00 and 14:00: %v", got)
	}
	if got := s.Between(mustTime(t, "2026-12-01T00:00:00Z"), mustTime(t, "2026-12-02T00:00:00Z"), 2); len(got) != 2 || !got[1].Equal(mustTime(t, "2026-12-01T23:00:00Z")) {
		t.Errorf("the last two hours of a day: %v", got)
	}
}

// TestEveryTimes: an interval counts from when the schedule was stored,
// on whole seconds, as the server counts it.
func TestEveryTimes(t *testing.T) {
	t.Parallel()
	s, err := ParseSpec("", "30s", "")
	if err != nil {
		t.Fatal(err)
	}
	armed := mustTime(t, "2026-12-02T10:00:00Z").Add(400 * time.Millisecond)
	if n := s.Next(armed, armed); !n.Equal(mustTime(t, "2026-12-02T10:00:30Z")) {
		t.Errorf("first fire %s", n)
	}
	if n := s.Next(mustTime(t, "2026-12-02T10:05:10Z"), armed); !n.Equal(mustTime(t, "2026-12-02T10:05:30Z")) {
		t.Errorf("fire after 10:05:10: %s", n)
	}
	if slot := s.Slot(mustTime(t, "2026-12-02T10:05:30Z")); !slot.Equal(mustTime(t, "2026-12-02T10:05:00Z")) {
		t.Errorf("slot %s", slot)
	}
	// A fire the server made late, after which it counts from that fire:
	// its runs stay on the grid armed at 10:00:00.
	for _, c := range []struct{ due, want string }{
		{"2026-12-02T10:05:30Z", "2026-12-02T10:05:30Z"},
		{"2026-12-02T10:05:47Z", "2026-12-02T10:05:30Z"},
		{"2026-12-02T10:06:17Z", "2026-12-02T10:06:00Z"},
	} {
		if got := s.Align(mustTime(t, c.due), armed); !got.Equal(mustTime(t, c.want)) {
			t.Errorf("fire due %s stands for %s, want %s", c.due, got, c.want)
		}
	}
	if s.Header() != "@every 30s" {
		t.Errorf("header %q", s.Header())
	}
}

// TestRunIDsAndJitter: run ids are valid for the longest name, and the
// jitter of a fire is the same each time, below the bound, and varies
// between fires.
func TestRunIDsAndJitter(t *testing.T) {
	t.Parallel()
	name := strings.Repeat("n", subjects.MaxScheduleName)
	at := mustTime(t, "2026-12-02T10:00:00Z").Add(123 * time.Millisecond)
	for _, id := range []string{RunID(name, at), TriggerRunID(name, at)} {
		if err := subjects.CheckRunID(id); err != nil {
			t.Errorf("run id %q: %v", id, err)
		}
	}
	if got := RunID("nightly", at); got != "nightly-20261202T100000Z" {
		t.Errorf("RunID %q", got)
	}
	if got := TriggerRunID("nightly", at); got != "nightly-manual-20261202T100000123Z" {
		t.Errorf("TriggerRunID %q", got)
	}
	if subjects.CheckScheduleName(name+"n") == nil {
		t.Error("a name too long for its run ids was accepted")
	}
	seen := map[time.Duration]bool{}
	for i := range 50 {
		slot := at.Add(time.Duration(i) * time.Hour)
		d := JitterDelay("nightly", slot, 5*time.Minute)
		if d != JitterDelay("nightly", slot, 5*time.Minute) || d < 0 || d >= 5*time.Minute {
			t.Fatalf("jitter %v of fire %s", d, slot)
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Errorf("jitter takes %d values over 50 fires", len(seen))
	}
	if JitterDelay("nightly", at, 0) != 0 {
		t.Error("jitter without a bound")
	}
}

// FuzzParseSpec: any expression is accepted or refused without a panic,
// and an accepted one's next fire is after the time asked and stands for
// itself.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{"0 * * * *", "*/15 9-17 * * mon-fri", "0 0 13 * fri", "@hourly", "1,2,3 * * * * *", "5/7 * * * *", "* * 31 2 *"} {
		f.Add(seed)
	}
	at := time.Date(2026, 12, 2, 10, 43, 24, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseSpec(expr, "", "")
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("%q: refusal %v does not wrap ErrSpec", expr, err)
			}
			return
		}
		next := s.Next(at, time.Time{})
		if next.IsZero() {
			return // never within five years (Feb 31st)
		}
		if !next.After(at) {
			t.Fatalf("%q: next %s is not after %s", expr, next, at)
		}
	})
}
