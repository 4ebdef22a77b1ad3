package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	full := Config{}.WithDefaults()
	if len(full.Setups) != 1 || full.Setups[0].Mode != Single || len(full.Setups[0].Scenarios) != len(AllScenarios) {
		t.Errorf("default setups %+v", full.Setups)
	}
	if full.ParkedRuns != 100_000 || full.Runs != 50_000 || full.Duration != 10*time.Second {
		t.Errorf("full defaults %+v", full)
	}
	short := Config{Short: true, Setups: []Setup{{Mode: Processes}}}.WithDefaults()
	if full.TimerRuns != 10_000 || full.ConsoleRuns != 100_000 || short.TimerRuns != 50 || short.ConsoleRuns != 300 {
		t.Errorf("timer and console runs: full %d, %d; short %d, %d", full.TimerRuns, full.ConsoleRuns, short.TimerRuns, short.ConsoleRuns)
	}
	if short.ParkedRuns != 100 || short.Duration != time.Second || short.Setups[0].Dispatchers != 1 || short.Setups[0].Workers != 1 {
		t.Errorf("short defaults %+v", short)
	}
	if err := full.validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown mode", Config{Setups: []Setup{{Mode: "cloud"}}}, `Setups[0]: unknown mode "cloud"`},
		{"processes without agent", Config{Setups: []Setup{{Mode: Processes}}}, "set Config.Agent"},
		{"too many dispatchers", Config{Agent: []string{"x"}, Setups: []Setup{{Mode: Processes, Dispatchers: 65}}}, "65 dispatchers"},
		{"unknown scenario", Config{Setups: []Setup{{Mode: Single, Scenarios: []Scenario{"nap"}}}}, `unknown scenario "nap"`},
		{"negative window", Config{Window: -1}, "Window is -1"},
		{"negative warm-up", Config{Warmup: -1}, "Warmup and DispatcherConcurrency"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.cfg.WithDefaults().validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("validate() = %v, want an error containing %q", err, c.want)
			}
			if _, err := Run(context.Background(), c.cfg); err == nil {
				t.Error("Run accepted the config")
			}
		})
	}
}

func TestParseScenarios(t *testing.T) {
	t.Parallel()
	all, err := ParseScenarios("all")
	if err != nil || len(all) != len(AllScenarios) {
		t.Errorf("all: %v %v", all, err)
	}
	two, err := ParseScenarios("one-task, parked")
	if err != nil || len(two) != 2 || two[0] != OneTask || two[1] != Parked {
		t.Errorf("two: %v %v", two, err)
	}
	if got, err := ParseScenarios("timers,console-index"); err != nil || len(got) != 2 || got[0] != Timers || got[1] != ConsoleIndex {
		t.Errorf("timers,console-index: %v %v", got, err)
	}
	if _, err := ParseScenarios("one-task,nope"); err == nil || !strings.Contains(err.Error(), `unknown scenario "nope"`) {
		t.Errorf("a bad name: %v", err)
	}
}

func TestWorkloadsCoverEveryScenario(t *testing.T) {
	t.Parallel()
	for _, sc := range AllScenarios {
		if sc == ConsoleIndex {
			continue // it runs no runs
		}
		w, ok := workloads[sc]
		if !ok || w.scenario != sc || w.code == "" || w.workflow == "" || (w.doc == "") != (sc == Timers) {
			t.Errorf("scenario %s: workload %+v", sc, w)
		}
	}
}

// The timer workflows' delays start at the lead, a grain apart, and
// leave every run time to be started before the instant.
func TestTimerDelays(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 50, 10_000, 1_000_000} {
		d := timerDelays(n)
		if len(d) == 0 || len(d) > timerDocs || d[0] != timerLead(n) || d[0]%timerGrain != 0 {
			t.Errorf("n=%d: delays %v..., lead %s", n, d[:min(3, len(d))], timerLead(n))
			continue
		}
		for j := 1; j < len(d); j++ {
			if d[j-1]-d[j] != timerGrain {
				t.Errorf("n=%d: delay %d is %s after %s", n, j, d[j], d[j-1])
			}
		}
		if last := d[len(d)-1]; last < 500*time.Millisecond {
			t.Errorf("n=%d: the shortest delay %s leaves no time to arm", n, last)
		}
	}
}

func TestProcReaders(t *testing.T) {
	t.Parallel()
	u, err := readUsage(0)
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if u.RSS <= 0 || u.Peak < u.RSS {
		t.Errorf("usage of this process: %+v", u)
	}
	if busy, total := cpuTicks(); total == 0 || busy > total {
		t.Errorf("machine ticks: busy %d of %d", busy, total)
	}
	if n := diskBytes(t.TempDir()); n != 0 {
		t.Errorf("an empty directory holds %d bytes", n)
	}
}

func TestParseDurability(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Durability{
		"":                 {},
		"default":          {},
		"fsync":            {Always: true},
		" always":          {Always: true},
		"100ms":            {Interval: 100 * time.Millisecond},
		"sync-interval=1s": {Interval: time.Second},
	} {
		got, err := ParseDurability(in)
		if err != nil || got != want {
			t.Errorf("ParseDurability(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseDurability(got.String()); err != nil || back != got {
			t.Errorf("ParseDurability(%q) = %+v, %v; want %+v", got.String(), back, err, got)
		}
	}
	for _, bad := range []string{"never", "0s", "-1s", "sync-interval=x"} {
		if _, err := ParseDurability(bad); err == nil {
			t.Errorf("ParseDurability(%q) accepted", bad)
		}
	}
	if args := (Durability{Interval: time.Second}).agentArgs(); len(args) != 2 || args[1] != "1s" {
		t.Errorf("agent args = %q", args)
	}
}
