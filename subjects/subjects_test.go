package subjects

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		ok   bool
		want string
	}{
		{"order-42_a", true, ""},
		{"", false, "empty"},
		{"a.b", false, "'.'"},
		{"a*", false, "wildcard"},
		{"a>", false, "wildcard"},
		{"a b", false, "white space"},
		{"a\tb", false, "white space"},
		{"é", false, "byte 0xc3"},
		{strings.Repeat("x", MaxToken), true, ""},
		{strings.Repeat("x", MaxToken+1), false, "longer than"},
	}
	for _, c := range cases {
		for name, check := range map[string]func(string) error{"run": CheckRunID, "task": CheckTask, "event": CheckEventType} {
			err := check(c.in)
			if (err == nil) != c.ok {
				t.Errorf("%s(%q) = %v, want ok=%v", name, c.in, err, c.ok)
				continue
			}
			if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%s(%q) = %q, want ErrInvalid mentioning %q", name, c.in, err, c.want)
			}
		}
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1", "1.2.0", "2024-01+build"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q) = %v", v, err)
		}
		if tok := VersionToken(v); strings.ContainsAny(tok, ".*> ") {
			t.Errorf("VersionToken(%q) = %q is not one token", v, tok)
		}
	}
	for _, v := range []string{"", "1~2", "1 2", "1*", strings.Repeat("1", MaxVersion+1)} {
		if err := CheckVersion(v); err == nil {
			t.Errorf("CheckVersion(%q) accepted", v)
		}
	}
	if VersionToken("1.2") == VersionToken("1_2") {
		t.Error("version tokens collide")
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	n := Must("")
	if got := n.Event("r1", "payment"); got != "jetflow.in.r1.event.payment" {
		t.Errorf("Event = %q", got)
	}
	if got := n.Task("charge", "1.0"); got != "jetflow.task.charge.1~0" {
		t.Errorf("Task = %q", got)
	}
	if _, err := New("bad.prefix"); err == nil {
		t.Error("a prefix with '.' was accepted")
	}
	other := Must("blue")
	if other.InputStream() == n.InputStream() || other.RunBucket() == n.RunBucket() {
		t.Error("two prefixes share a stream or bucket")
	}
}

func TestParseInput(t *testing.T) {
	t.Parallel()
	n := Must("jf")
	cases := []struct {
		subject, run, kind, event string
		ok                        bool
	}{
		{"jf.in.r1.start", "r1", KindStart, "", true},
		{"jf.in.r1.event.paid", "r1", KindEvent, "paid", true},
		{"jf.in.r1.result", "r1", KindResult, "", true},
		{"jf.in.r1.timer", "r1", KindTimer, "", true},
		{"jf.in.r1.cancel", "r1", KindCancel, "", true},
		{"jf.in.r1.redrive", "r1", KindRedrive, "", true},
		{"jf.in.r1.reset", "r1", KindReset, "", true},
		{"jf.in.r1.redrive.x", "", "", "", false},
		{"jf.in.r1.expire", "", "", "", false},
		{"jf.in.r1.event", "", "", "", false},
		{"jf.in.r1.event.a.b", "", "", "", false},
		{"jf.in.r1.bogus", "", "", "", false},
		{"jf.in.r1.start.x", "", "", "", false},
		{"jf.in.r1", "", "", "", false},
		{"other.in.r1.start", "", "", "", false},
		// Stored in a partitioned stream (partition.go).
		{"jf.in.r1.3.start", "r1", KindStart, "", true},
		{"jf.in.r1.15.event.paid", "r1", KindEvent, "paid", true},
		{"jf.in.r1.0.result", "r1", KindResult, "", true},
		{"jf.in.r1.3", "", "", "", false},
		{"jf.in.r1.3.4.start", "", "", "", false},
		{"jf.in.r1.3.event", "", "", "", false},
	}
	for _, c := range cases {
		run, kind, ev, err := n.ParseInput(c.subject)
		if (err == nil) != c.ok || run != c.run || kind != c.kind || ev != c.event {
			t.Errorf("ParseInput(%q) = %q %q %q %v", c.subject, run, kind, ev, err)
		}
	}
}

func FuzzParseInput(f *testing.F) {
	n := Must("jf")
	for _, s := range []string{"jf.in.r1.start", "jf.in.r1.7.start", "jf.in.r1.event.x", "jf.in..", "jf.in.r1.event.", "jf.in.r1.redrive"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		run, kind, ev, err := n.ParseInput(s)
		if err != nil {
			return
		}
		var back string
		if kind == KindEvent {
			back = n.Event(run, ev)
		} else {
			back = n.prefix + ".in." + run + "." + kind
		}
		if tok := strings.Split(s, ".")[3]; back != s && n.prefix+".in."+run+"."+tok+strings.TrimPrefix(back, n.prefix+".in."+run) != s {
			t.Fatalf("ParseInput(%q) does not round-trip: %q", s, back)
		}
	})
}

// The timer stream's subjects never overlap the input stream's (two
// streams may not share a subject), and the input stream's transform
// turns a run's fired subject into exactly its timer subject.
func TestTimerSubjects(t *testing.T) {
	t.Parallel()
	n := Must("jf")
	for _, timers := range []string{n.ScheduleAll(), n.FiredAll()} {
		if matches(n.InputAll(), strings.TrimSuffix(strings.TrimSuffix(timers, ">"), "*")+"x") {
			t.Errorf("timer subjects %q overlap the input stream's %q", timers, n.InputAll())
		}
	}
	if !matches(n.FiredAll(), n.Fired("r1")) || !matches(n.ScheduleAll(), n.Schedule("r1", "t1")) {
		t.Errorf("%q or %q escapes the timer stream", n.Fired("r1"), n.Schedule("r1", "t1"))
	}
	if matches(n.FiredAll(), n.Schedule("r1", "t1")) || matches(n.ScheduleAll(), n.Fired("r1")) {
		t.Error("a schedule subject is also a fired one, or the reverse")
	}
	if got := strings.Replace(n.FiredToTimer(), "{{wildcard(1)}}", "r1", 1); got != n.Timer("r1") {
		t.Errorf("the transform of %q gives %q, want %q", n.Fired("r1"), got, n.Timer("r1"))
	}
	// A removal schedule is a schedule, but not one of the run's timers,
	// whose purge at settling must leave it.
	if !matches(n.ScheduleAll(), n.Expiry("r1")) || matches(n.Schedule("r1", ">"), n.Expiry("r1")) {
		t.Errorf("removal schedule %q: outside %q or inside %q", n.Expiry("r1"), n.ScheduleAll(), n.Schedule("r1", ">"))
	}
	for _, subj := range []string{n.Fired("r1"), n.Expiry("r1")} {
		if !matches(n.RunTimerMessages("r1"), subj) {
			t.Errorf("%q does not match %q", n.RunTimerMessages("r1"), subj)
		}
	}
	// An armed instance is one of the run's timer schedules, which the
	// purge at settling removes, and no other instance of the timer.
	inst := n.ScheduleInstance("r1", "t1", "7")
	if !matches(n.ScheduleAll(), inst) || !matches(n.Schedule("r1", ">"), inst) || matches(n.RunTimerMessages("r1"), inst) {
		t.Errorf("instance schedule %q: outside %q or %q, or inside %q", inst, n.ScheduleAll(), n.Schedule("r1", ">"), n.RunTimerMessages("r1"))
	}
	if inst == n.ScheduleInstance("r1", "t1", "8") || inst == n.Schedule("r1", "t1") {
		t.Errorf("two instances of a timer share the subject %q", inst)
	}
	if matches(n.RunTimerMessages("r1"), n.Fired("r2")) || matches(n.RunTimerMessages("r1"), n.Schedule("r1", "t1")) {
		t.Errorf("%q matches another run's or a timer's schedule", n.RunTimerMessages("r1"))
	}
	if n.TimerStream() == n.InputStream() || n.TimerStream() == n.TaskStream() {
		t.Errorf("the timer stream shares the name %q", n.TimerStream())
	}
}

// matches reports whether the subject filter (with * and >) matches the
// literal subject.
func matches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

func TestRunToken(t *testing.T) {
	t.Parallel()
	n := Must("jetflow")
	for subject, want := range map[string]string{
		"jetflow.in.r1.start":    "r1",
		"jetflow.in.r-2.event.x": "r-2",
		"jetflow.in.r3":          "\x00jetflow.in.r3",
		"jetflowx.in.r1.start":   "\x00jetflowx.in.r1.start",
		"jetflow.in.":            "\x00jetflow.in.",
	} {
		if got := n.RunToken(subject); got != want {
			t.Errorf("RunToken(%q) = %q, want %q", subject, got, want)
		}
	}
}

func TestServerNames(t *testing.T) {
	t.Parallel()
	n := Must("p")
	for _, c := range [][2]string{
		{APIPrefix(""), "$JS.API."},
		{APIPrefix("hub"), "$JS.hub.API."},
		{n.API("STREAM.INFO"), "$JS.API.STREAM.INFO"},
		{n.API("CONSUMER.CREATE", "s", "c", ">"), "$JS.API.CONSUMER.CREATE.s.c.>"},
		{n.Ack("s", "c"), "$JS.ACK.s.c.>"},
		{n.FlowControl("s"), "$JS.FC.s.>"},
		{n.KVStream(n.RunBucket()), "KV_p_runs"},
		{n.KVKeyPrefix("b"), "$KV.b."},
		{n.KVKey("b", "name.>"), "$KV.b.name.>"},
		{n.KVKeys("b"), "$KV.b.>"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %q, want %q", c[0], c[1])
		}
	}
}
