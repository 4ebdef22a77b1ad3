package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
)

// Mode is how a setup deploys jetflow.
type Mode string

// Modes.
const (
	// Single runs the server, one dispatcher, the workers and the load
	// generator in this process, over TCP loopback.
	Single Mode = "single"
	// Processes runs the server, N dispatchers and M workers as separate
	// processes; the load generator stays in this process.
	Processes Mode = "processes"
	// Cluster is Processes on a 3-node cluster with 3 replicas.
	Cluster Mode = "cluster"
)

// Scenario names one workload.
type Scenario string

// Scenarios.
const (
	// OneTask is a workflow of one task.
	OneTask Scenario = "one-task"
	// FanOut is a DAG fanning out to 3 tasks joined into a fourth.
	FanOut Scenario = "fan-out"
	// Event is a wait for an event sent right after the start.
	Event Scenario = "event"
	// Loop runs one task 10 times in a loop (a long run).
	Loop Scenario = "loop-10"
	// Parked parks many runs in a wait, then wakes them all.
	Parked Scenario = "parked"
	// Timers puts many runs to sleep on timers due at one instant and
	// measures how late each fires.
	Timers Scenario = "timers"
	// ConsoleIndex has a fresh console index many runs and serves every
	// page of them.
	ConsoleIndex Scenario = "console-index"
	// LargePayload runs one-task runs whose input and result are each
	// Config.PayloadSize bytes (by reference, through the payload bucket),
	// one at a time, beside the same runs with a body inline below the
	// threshold, and reports MB/s end to end.
	LargePayload Scenario = "large-payload"
)

// AllScenarios lists every scenario in the order they run.
var AllScenarios = []Scenario{OneTask, FanOut, Event, Loop, Parked, Timers, ConsoleIndex, LargePayload}

// Setup is one deployment and the scenarios measured on it.
type Setup struct {
	Mode Mode
	// Dispatchers is how many dispatcher processes run (Processes and
	// Cluster; Single always runs one). Default 1.
	Dispatchers int
	// Workers is how many worker processes run (Processes and Cluster;
	// Single runs one worker). Default 1.
	Workers int
	// Scenarios run in order. Default: every scenario.
	Scenarios []Scenario
	// Durability is how the servers sync their stores. Default: the
	// server's default (an fsync every two minutes).
	Durability Durability
	// Round numbers a setup measured again, interleaved with the others
	// of its round, so that the scale targets compare d=1 with d=2 and
	// d=4 round by round (their median); 0 for a setup measured once.
	// A setup of a round after the first measures no handover.
	Round int
}

// Name is the setup as the report shows it, e.g. "processes d=2 w=1".
func (s Setup) Name() string {
	name := string(Single)
	if s.Mode != Single {
		name = fmt.Sprintf("%s d=%d w=%d", s.Mode, s.Dispatchers, s.Workers)
	}
	if s.Durability != (Durability{}) {
		name += " " + s.Durability.String()
	}
	if s.Round > 0 {
		name += fmt.Sprintf(" #%d", s.Round)
	}
	return name
}

// Config says what to measure and for how long. The zero value measures
// every scenario in one process with the full counts.
type Config struct {
	// Setups are measured in order. Default: one Single setup.
	Setups []Setup
	// Short shrinks every count so that the whole bench takes seconds:
	// it checks that every scenario completes, not how fast.
	Short bool
	// Runs caps the runs of each saturation phase. Default 50,000 (60 in
	// Short mode).
	Runs int
	// Duration caps each saturation phase. Default 10s (1s in Short mode).
	Duration time.Duration
	// Window is how many runs are in flight at saturation. Default 256
	// (16 in Short mode).
	Window int
	// SerialRuns caps the runs measured one at a time for latency at
	// concurrency 1. Default 2,000 (10 in Short mode).
	SerialRuns int
	// SerialDuration caps the concurrency-1 phase. Default 5s.
	SerialDuration time.Duration
	// Warmup is how many runs precede each measurement, unmeasured.
	// Default 1,000 (10 in Short mode).
	Warmup int
	// ParkedRuns is how many runs the parked scenario parks. Default
	// 100,000 (100 in Short mode).
	ParkedRuns int
	// TimerRuns is how many runs the timers scenario puts to sleep on
	// timers due at one instant. Default 10,000 (50 in Short mode).
	TimerRuns int
	// ConsoleRuns is how many runs the console-index scenario indexes.
	// Default 100,000 (300 in Short mode).
	ConsoleRuns int
	// PayloadSize is the size in bytes of the large-payload scenario's
	// input and of its result, each. Default 16 MiB (1 MiB in Short mode).
	PayloadSize int
	// PayloadRuns is how many runs of each size the large-payload
	// scenario measures. Default 10 (2 in Short mode).
	PayloadRuns int
	// RawOps caps each raw JetStream measurement. Default 20,000 (200 in
	// Short mode); each is also capped at Duration.
	RawOps int
	// RunTimeout is how long one run may take before the bench fails
	// (in the parked scenario: how long no parked run may end or park).
	// Default 60s.
	RunTimeout time.Duration
	// WorkerConcurrency is each worker's concurrency. Default 64.
	WorkerConcurrency int
	// DispatcherConcurrency is each dispatcher's concurrency. Default 0:
	// the dispatcher's own default.
	DispatcherConcurrency int
	// Agent is the command line that starts a helper process, the role
	// flags appended (e.g. [jetflow bench-agent]). Required for Processes
	// and Cluster setups.
	Agent []string
	// AgentEnv is added to the environment of helper processes.
	AgentEnv []string
	// Dir holds the servers' stores; each setup gets a fresh directory
	// below it, removed afterwards. Default: a temporary directory.
	Dir string
	// CPUProfile, when set, is a file prefix: each setup writes a CPU
	// profile of every process (this one included) during its saturation
	// phases, named <prefix>-<setup>-<role>.pprof, and the parked scenario
	// a heap profile of each once its runs are parked, named
	// <prefix>-<setup>-parked-heap-<role>.pprof.
	CPUProfile string
	// Progress receives one line per phase. Default: io.Discard.
	Progress io.Writer
	// Logger receives the components' logs. Default: warnings and errors
	// discarded too, so that logging is not what is measured.
	Logger *slog.Logger
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if len(c.Setups) == 0 {
		c.Setups = []Setup{{Mode: Single}}
	}
	c.Setups = slices.Clone(c.Setups)
	for i := range c.Setups {
		s := &c.Setups[i]
		if s.Dispatchers == 0 {
			s.Dispatchers = 1
		}
		if s.Workers == 0 {
			s.Workers = 1
		}
		if s.Mode == Single {
			s.Dispatchers, s.Workers = 1, 1
		}
		if len(s.Scenarios) == 0 {
			s.Scenarios = AllScenarios
		}
	}
	pick := func(p *int, full, short int) {
		if *p == 0 {
			*p = full
			if c.Short {
				*p = short
			}
		}
	}
	pick(&c.Runs, 50_000, 60)
	pick(&c.Window, 256, 16)
	pick(&c.SerialRuns, 2_000, 10)
	pick(&c.Warmup, 1_000, 10)
	pick(&c.ParkedRuns, 100_000, 100)
	pick(&c.TimerRuns, 10_000, 50)
	pick(&c.ConsoleRuns, 100_000, 300)
	pick(&c.PayloadSize, 16<<20, 1<<20)
	pick(&c.PayloadRuns, 10, 2)
	pick(&c.RawOps, 20_000, 200)
	pick(&c.WorkerConcurrency, 64, 64)
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
		if c.Short {
			c.Duration = time.Second
		}
	}
	if c.SerialDuration == 0 {
		c.SerialDuration = 5 * time.Second
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	for i, s := range c.Setups {
		where := fmt.Sprintf("Setups[%d]", i)
		switch s.Mode {
		case Single:
		case Processes, Cluster:
			if len(c.Agent) == 0 {
				errs = append(errs, fmt.Errorf("%s: mode %q starts helper processes: set Config.Agent (e.g. [jetflow bench-agent])", where, s.Mode))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: unknown mode %q (use %s, %s or %s)", where, s.Mode, Single, Processes, Cluster))
		}
		if s.Durability.Always && s.Durability.Interval > 0 || s.Durability.Interval < 0 {
			errs = append(errs, fmt.Errorf("%s: durability fsync and interval %s: give fsync or a positive interval", where, s.Durability.Interval))
		}
		if s.Dispatchers < 1 || s.Dispatchers > 64 || s.Workers < 1 || s.Workers > 64 {
			errs = append(errs, fmt.Errorf("%s: %d dispatchers and %d workers: each must be 1 to 64", where, s.Dispatchers, s.Workers))
		}
		for _, sc := range s.Scenarios {
			if !slices.Contains(AllScenarios, sc) {
				errs = append(errs, fmt.Errorf("%s: unknown scenario %q (use %s)", where, sc, scenarioList()))
			}
		}
	}
	positive := map[string]int{
		"Runs": c.Runs, "Window": c.Window, "SerialRuns": c.SerialRuns, "ParkedRuns": c.ParkedRuns,
		"TimerRuns": c.TimerRuns, "ConsoleRuns": c.ConsoleRuns, "PayloadSize": c.PayloadSize, "PayloadRuns": c.PayloadRuns, "RawOps": c.RawOps, "WorkerConcurrency": c.WorkerConcurrency,
	}
	for _, k := range slices.Sorted(maps.Keys(positive)) {
		if positive[k] < 1 {
			errs = append(errs, fmt.Errorf("%s is %d; it must be positive", k, positive[k]))
		}
	}
	if c.Warmup < 0 || c.DispatcherConcurrency < 0 {
		errs = append(errs, errors.New("Warmup and DispatcherConcurrency must not be negative")) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	if c.Duration <= 0 || c.SerialDuration <= 0 || c.RunTimeout <= 0 {
		errs = append(errs, errors.New("Duration, SerialDuration and RunTimeout must be positive")) //nolint:staticcheck // ST1005: it begins with the field's name
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: config: %w", err)
	}
	return nil
}

func scenarioList() string {
	names := make([]string, len(AllScenarios))
	for i, s := range AllScenarios {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseScenarios reads a comma-separated scenario list; "all" is every one.
func ParseScenarios(s string) ([]Scenario, error) {
	if s == "" || s == "all" {
		return slices.Clone(AllScenarios), nil
	}
	var out []Scenario
	for _, f := range strings.Split(s, ",") {
		sc := Scenario(strings.TrimSpace(f))
		if !slices.Contains(AllScenarios, sc) {
			return nil, fmt.Errorf("unknown scenario %q (use all or %s)", sc, scenarioList())
		}
		out = append(out, sc)
	}
	return out, nil
}
