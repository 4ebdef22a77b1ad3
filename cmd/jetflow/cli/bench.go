package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetflow/jetflow/bench"
	"github.com/jetflow/jetflow/dispatcher"
)

// Markers around the generated part of docs/PERFORMANCE.md.
const (
	docBegin = "<!-- bench:begin -->"
	docEnd   = "<!-- bench:end -->"
)

type benchFlags struct {
	modes, dispatchers, scenarios string
	durability                    string
	workers, rounds               int
	cfg                           bench.Config
	jsonOut, doc, profile, from   string
	quiet, checkTargets           bool
}

func newBench(s streams) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput, latency and cost against the raw JetStream bound",
		Long: `bench starts everything it needs (an embedded nats-server with file storage on
loopback, dispatchers, workers that echo their input) and measures, for each
scenario, runs per second at saturation, start-to-done latency one run at a
time and at saturation, CPU per run, the dispatcher's peak memory, and the
durable operations and bytes each run costs. On the same server it measures
raw JetStream operations and prints each rate as a fraction of the best rate
those operations allow.

Scenarios: one-task, fan-out (a DAG of 3 tasks joined into a fourth), event
(a wait for an event sent right after the start), loop-10, parked (many runs
parked in a wait, then all woken), timers (10,000 runs asleep on timers due
at one instant: how late each leaves its wait), console-index (a fresh
console indexes 100,000 stored runs and serves every page of them) and
large-payload (one-task runs one at a time whose input and result are each
--payload-size bytes, by reference through the payload bucket, beside runs
of 256 KiB inline: MB/s end to end).

Setups: single (everything in this process), processes (a server, N
dispatchers and M workers as processes, N from --dispatchers) and cluster (3
servers, 3 replicas). Unless --scenarios is given, single runs every
scenario, the processes setups one-task, fan-out (where a run's parallel
results meet) and event, the first also parked, and cluster one-task.
timers, console-index and large-payload run in single only: the processes setups are there
to compare dispatcher counts on throughput, the timers target is judged in
one process like the other one-process targets, and the console reads the
run bucket, not the dispatchers. Name them in --scenarios to run them on
every setup.

--rounds N measures the processes setups N times, one round after another
(d=1, d=2, d=4, then again), the later rounds one-task, fan-out and event
only and without the handover: the targets that compare dispatcher counts
are judged by the median of their round-by-round ratios, which one pair of
phases on a shared machine cannot settle within 5%.

The markdown report goes to stdout, progress to stderr. --short runs tiny
counts in seconds and fails unless every scenario completed and the report
is complete.`,
		Example: "  jetflow bench --short\n  jetflow bench --json bench.json --doc docs/PERFORMANCE.md",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, s, &f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.cfg.Short, "short", false, "tiny counts: check that every scenario completes and the report is complete (seconds)")
	fl.StringVar(&f.modes, "modes", "single,processes,cluster", "setups to measure: single, processes, cluster")
	fl.StringVar(&f.dispatchers, "dispatchers", "1,2,4", "dispatcher processes of each processes setup")
	fl.StringVar(&f.durability, "durability", "default,fsync", "how the servers sync their stores, comma-separated: default (every 2m), fsync (every write, as serve --fsync), or an fsync interval such as 100ms (serve --sync-interval); each one but default adds one setup per mode, one-task only unless --scenarios")
	fl.IntVar(&f.workers, "workers", 1, "worker processes of the processes and cluster setups")
	fl.IntVar(&f.rounds, "rounds", 1, "measure the processes setups this many times, interleaved, and judge the targets that compare dispatcher counts by the median of the rounds")
	fl.StringVar(&f.scenarios, "scenarios", "", "scenarios for every setup, comma-separated (one-task, fan-out, event, loop-10, parked, timers, console-index, large-payload; all); default per setup, see above")
	fl.IntVar(&f.cfg.Runs, "runs", 0, "cap on the runs of each saturation phase (default 50000)")
	fl.DurationVar(&f.cfg.Duration, "duration", 0, "cap on each saturation phase (default 10s)")
	fl.IntVar(&f.cfg.Window, "window", 0, "runs in flight at saturation (default 256)")
	fl.IntVar(&f.cfg.SerialRuns, "serial-runs", 0, "cap on the runs measured one at a time (default 2000)")
	fl.IntVar(&f.cfg.Warmup, "warmup", 0, "unmeasured runs before each measurement (default 1000)")
	fl.IntVar(&f.cfg.ParkedRuns, "parked", 0, "runs the parked scenario parks (default 100000)")
	fl.IntVar(&f.cfg.PayloadSize, "payload-size", 0, "bytes of each input and of each result of the large-payload scenario (default 16 MiB, above the payload threshold: by reference)")
	fl.IntVar(&f.cfg.PayloadRuns, "payload-runs", 0, "runs of each size the large-payload scenario measures (default 10)")
	fl.IntVar(&f.cfg.RawOps, "raw-ops", 0, "cap on each raw JetStream measurement (default 20000)")
	fl.IntVar(&f.cfg.WorkerConcurrency, "worker-concurrency", 0, "concurrency of each worker (default 64)")
	fl.IntVar(&f.cfg.DispatcherConcurrency, "dispatcher-concurrency", 0, "concurrency of each dispatcher (default: the dispatcher's)")
	fl.StringVar(&f.cfg.Dir, "dir", "", "directory for the servers' stores (default: a temporary one)")
	fl.StringVar(&f.jsonOut, "json", "", "write the JSON report to this file")
	fl.StringVar(&f.doc, "doc", "", "replace the generated section of this markdown file (docs/PERFORMANCE.md) with the report and its command")
	fl.StringVar(&f.profile, "cpuprofile", "", "write CPU profiles of every process during each saturation phase, named PREFIX-<setup>-<scenario>-<role>.pprof, and in the parked scenario a heap profile of each once its runs are parked, PREFIX-<setup>-parked-heap-<role>.pprof")
	fl.StringVar(&f.from, "from", "", "measure nothing: render the JSON report in this file (its targets evaluated afresh)")
	fl.BoolVar(&f.quiet, "quiet", false, "print no progress")
	fl.BoolVar(&f.checkTargets, "check-targets", false, "exit 1 when a target is not met")
	return cmd
}

func runBench(cmd *cobra.Command, s streams, f *benchFlags) error {
	cfg := f.cfg
	setups, err := benchSetups(f)
	if err != nil {
		return err
	}
	cfg.Setups = setups
	cfg.CPUProfile = f.profile
	if !f.quiet {
		cfg.Progress = s.err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: finding this executable to start helper processes: %w", err)
	}
	cfg.Agent = []string{exe, "bench-agent"}
	// One process hosts what serve does (single setups): the same GOGC.
	dispatcher.TuneGC(gogcSet())
	var rep *bench.Report
	var runErr error
	if f.from != "" {
		rep, runErr = readReport(f.from)
	} else {
		rep, runErr = bench.Run(cmd.Context(), cfg)
		if rep != nil {
			rep.Command = commandLine(cmd)
		}
	}
	if rep == nil {
		return runErr
	}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		return err
	}
	if _, err := s.out.Write(md.Bytes()); err != nil {
		return err
	}
	if f.jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonOut, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("bench: --json: %w", err)
		}
	}
	if runErr != nil {
		return runErr
	}
	if f.doc != "" {
		if err := updateDoc(f.doc, rep.Command, rep.Started, md.String()); err != nil {
			return err
		}
	}
	if err := rep.Check(); err != nil {
		fmt.Fprintf(s.err, "jetflow bench: the report is incomplete:\n%v\n", err)
		return exitError{1}
	}
	if f.checkTargets {
		for _, t := range rep.Targets {
			if !t.Met {
				fmt.Fprintf(s.err, "jetflow bench: target not met: %s: want %s, measured %s\n", t.Name, t.Want, t.Measured)
				err = exitError{1}
			}
		}
	}
	return err
}

// readReport reads a JSON report back; its command stays the one that
// measured it.
func readReport(file string) (*bench.Report, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("bench: --from: %w", err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("bench: --from %s: %w", file, err)
	}
	rep.Evaluate()
	return &rep, nil
}

// benchSetups turns the flags into the setups to measure.
func benchSetups(f *benchFlags) ([]bench.Setup, error) {
	var only []bench.Scenario
	if f.scenarios != "" {
		var err error
		if only, err = bench.ParseScenarios(f.scenarios); err != nil {
			return nil, fmt.Errorf("--scenarios: %w", err)
		}
	}
	pick := func(def ...bench.Scenario) []bench.Scenario {
		if only != nil {
			return only
		}
		return def
	}
	var setups, durable []bench.Setup
	var durabilities []bench.Durability
	for _, d := range strings.Split(f.durability, ",") {
		dur, err := bench.ParseDurability(d)
		if err != nil {
			return nil, fmt.Errorf("--durability: %w", err)
		}
		durabilities = append(durabilities, dur)
	}
	withDefault := slices.Contains(durabilities, bench.Durability{})
	for _, m := range strings.Split(f.modes, ",") {
		// Each durability but the default: one setup per mode (the first
		// dispatcher count), one-task unless --scenarios says otherwise.
		for _, dur := range durabilities {
			if dur == (bench.Durability{}) {
				continue
			}
			s := bench.Setup{Mode: bench.Mode(strings.TrimSpace(m)), Workers: f.workers, Durability: dur, Scenarios: pick(bench.OneTask)}
			if s.Mode == bench.Processes {
				n, err := strconv.Atoi(strings.TrimSpace(strings.Split(f.dispatchers, ",")[0]))
				if err != nil || n < 1 {
					return nil, fmt.Errorf("--dispatchers: %q is not a positive number", f.dispatchers)
				}
				s.Dispatchers = n
			}
			durable = append(durable, s)
		}
		if !withDefault {
			continue
		}
		switch mode := bench.Mode(strings.TrimSpace(m)); mode {
		case bench.Single:
			setups = append(setups, bench.Setup{Mode: mode, Scenarios: pick(bench.AllScenarios...)})
		case bench.Processes:
			for i, d := range strings.Split(f.dispatchers, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(d))
				if err != nil || n < 1 {
					return nil, fmt.Errorf("--dispatchers: %q is not a positive number", d)
				}
				sc := pick(bench.OneTask, bench.FanOut, bench.Event)
				if i == 0 && only == nil {
					sc = append(sc, bench.Parked)
				}
				setups = append(setups, bench.Setup{Mode: mode, Dispatchers: n, Workers: f.workers, Scenarios: sc})
			}
		case bench.Cluster:
			setups = append(setups, bench.Setup{Mode: mode, Workers: f.workers, Scenarios: pick(bench.OneTask)})
		default:
			return nil, fmt.Errorf("--modes: unknown mode %q (use single, processes, cluster)", m)
		}
	}
	if !withDefault {
		for _, s := range durable {
			if m := s.Mode; m != bench.Single && m != bench.Processes && m != bench.Cluster {
				return nil, fmt.Errorf("--modes: unknown mode %q (use single, processes, cluster)", m)
			}
		}
	}
	if f.rounds < 1 {
		return nil, fmt.Errorf("--rounds: %d is not a positive number", f.rounds)
	}
	if f.rounds > 1 {
		var err error
		if setups, err = repeatRounds(setups, f.rounds); err != nil {
			return nil, err
		}
	}
	return append(setups, durable...), nil
}

// repeatRounds numbers the processes setups as round 1 and appends rounds
// 2 to n of them, in the same order, each measuring the scenarios the scale
// targets compare.
func repeatRounds(setups []bench.Setup, n int) ([]bench.Setup, error) {
	var first []bench.Setup
	for i := range setups {
		if setups[i].Mode == bench.Processes {
			setups[i].Round = 1
			first = append(first, setups[i])
		}
	}
	if len(first) == 0 {
		return nil, fmt.Errorf("--rounds: %d rounds of no processes setup (add processes to --modes, with the default in --durability)", n)
	}
	for r := 2; r <= n; r++ {
		for _, s := range first {
			s.Round = r
			s.Scenarios = slices.DeleteFunc(slices.Clone(s.Scenarios), func(sc bench.Scenario) bool {
				return !slices.Contains(bench.ScaleScenarios, sc)
			})
			if len(s.Scenarios) > 0 {
				setups = append(setups, s)
			}
		}
	}
	return setups, nil
}

// commandLine is how the report says it was produced.
func commandLine(cmd *cobra.Command) string {
	parts := []string{"jetflow bench"}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		parts = append(parts, "--"+fl.Name+"="+fl.Value.String())
	})
	return strings.Join(parts, " ")
}

// updateDoc replaces what lies between the markers of file with the
// command and the report.
func updateDoc(file, command string, measured time.Time, report string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("bench: --doc: %w", err)
	}
	text := string(data)
	begin, end := strings.Index(text, docBegin), strings.Index(text, docEnd)
	if begin < 0 || end < begin {
		return fmt.Errorf("bench: --doc: %s has no %s ... %s section to replace", file, docBegin, docEnd)
	}
	section := fmt.Sprintf("%s\nProduced by `%s` on %s.\n\n%s%s", docBegin, command, measured.UTC().Format("2006-01-02"), report, docEnd)
	text = text[:begin] + section + text[end+len(docEnd):]
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return fmt.Errorf("bench: --doc: %w", err)
	}
	return nil
}

// newBenchAgent is the hidden verb bench starts its helper processes with.
func newBenchAgent(s streams) *cobra.Command {
	return &cobra.Command{
		Use:                "bench-agent",
		Short:              "A helper process of jetflow bench (internal)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := bench.AgentMain(cmd.Context(), args, s.in, s.out, gogcSet())
			if err != nil && !errors.Is(err, cmd.Context().Err()) {
				return err
			}
			return nil
		},
	}
}
