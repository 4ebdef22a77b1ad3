package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Run measures every setup of cfg in turn. On error it returns the report
// of what was measured so far with the error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{
		Short:   cfg.Short,
		Started: time.Now().UTC().Truncate(time.Second),
		Host: Host{
			OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
			GoVersion: runtime.Version(), NATSServer: server.VERSION, LoadBefore: loadAverage(),
		},
		Config: ReportConfig{
			Runs: cfg.Runs, DurationSeconds: cfg.Duration.Seconds(), Window: cfg.Window, SerialRuns: cfg.SerialRuns,
			Warmup: cfg.Warmup, ParkedRuns: cfg.ParkedRuns, TimerRuns: cfg.TimerRuns, ConsoleRuns: cfg.ConsoleRuns, PayloadSize: cfg.PayloadSize,
			RawOps: cfg.RawOps, WorkerConcurrency: cfg.WorkerConcurrency,
		},
	}
	base := cfg.Dir
	if base == "" {
		dir, err := os.MkdirTemp("", "jetflow-bench-*")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		base = dir
	}
	var err error
	for i, s := range cfg.Setups {
		var sr SetupReport
		sr, err = runSetup(ctx, cfg, s, filepath.Join(base, fmt.Sprintf("setup%d", i)))
		rep.Setups = append(rep.Setups, sr)
		if err != nil {
			err = fmt.Errorf("%s: %w", s.Name(), err)
			break
		}
	}
	rep.Host.LoadAfter = loadAverage()
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Targets = evaluate(rep)
	return rep, err
}

// runSetup deploys s, measures raw JetStream on its server, then each of
// its scenarios, and tears it down.
func runSetup(ctx context.Context, cfg Config, s Setup, dir string) (rep SetupReport, err error) {
	rep = SetupReport{Setup: s.Name(), Mode: s.Mode, Dispatchers: s.Dispatchers, Workers: s.Workers, Round: s.Round, Load: loadAverage()}
	if s.Durability != (Durability{}) {
		rep.Durability = s.Durability.String()
	}
	fmt.Fprintf(cfg.Progress, "%s  %-22s starting (load average %.2f)\n", time.Now().Format("15:04:05"), s.Name(), rep.Load[0])
	dep, err := deploy(ctx, cfg, s, dir)
	if err != nil {
		return rep, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, dep.stop(sctx))
	}()
	rep.Replicas = dep.replicas
	if rep.Raw, err = measureRaw(ctx, dep.url, dep.replicas, cfg.RawOps, cfg.Duration); err != nil {
		return rep, err
	}
	drv, err := newDriver(ctx, dep.url, dep.fleet.Names, cfg.RunTimeout)
	if err != nil {
		return rep, err
	}
	defer drv.close()
	r := &runner{cfg: cfg, dep: dep, drv: drv, raw: rep.Raw}
	for _, sc := range s.Scenarios {
		w := workloads[sc]
		var sr ScenarioReport
		switch sc {
		case Parked:
			sr, err = r.parked(ctx, w)
		case Timers:
			sr, err = r.timers(ctx, w)
		case ConsoleIndex:
			sr, err = r.consoleIndex(ctx)
		case LargePayload:
			sr, err = r.largePayload(ctx, w)
		default:
			sr, err = r.scenario(ctx, w)
		}
		if err != nil {
			return rep, fmt.Errorf("%s: %w", sc, err)
		}
		rep.Scenarios = append(rep.Scenarios, sr)
	}
	if s.Mode == Processes && s.Dispatchers >= 2 && s.Round <= 1 {
		if rep.Handover, err = r.handover(ctx); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
