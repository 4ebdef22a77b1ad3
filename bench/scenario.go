package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// runner measures the scenarios of one deployment.
type runner struct {
	cfg Config
	dep *deployment
	drv *driver
	raw []RawOp
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.cfg.Progress, "%s  %-22s %s\n", time.Now().Format("15:04:05"), r.dep.setup.Name(), fmt.Sprintf(format, args...))
}

// sample is what a phase is measured by at its start and end.
type sample struct {
	c     counts
	use   map[string][]procUsage
	stats stats // the dispatchers'
	wstat stats // the workers'
	// busy and total are the machine's CPU ticks, at, the wall clock.
	busy, total uint64
	at          time.Time
}

func (r *runner) sample(ctx context.Context) (sample, error) {
	c, err := r.drv.quiesce(ctx)
	if err != nil {
		return sample{}, err
	}
	st, err := r.dep.roleStats(roleDispatcher)
	if err != nil {
		return sample{}, err
	}
	ws, err := r.dep.roleStats(roleWorker)
	if err != nil {
		return sample{}, err
	}
	busy, total := cpuTicks()
	return sample{c: c, use: r.dep.usage(), stats: st, wstat: ws, busy: busy, total: total, at: time.Now()}, nil
}

// scenario measures one non-parked scenario: warm-up, latency one run at
// a time, then throughput and latency at saturation.
func (r *runner) scenario(ctx context.Context, w workload) (ScenarioReport, error) {
	cfg := r.cfg
	rep := ScenarioReport{Scenario: w.scenario, Window: cfg.Window}
	r.progress("%s: warm-up, %d runs", w.scenario, cfg.Warmup)
	if _, _, err := r.drv.closedLoop(ctx, w, "w", cfg.Warmup, cfg.Window, cfg.Duration); err != nil {
		return rep, err
	}
	if _, err := r.drv.quiesce(ctx); err != nil {
		return rep, err
	}
	r.progress("%s: one run at a time, up to %d runs or %s", w.scenario, cfg.SerialRuns, cfg.SerialDuration)
	serial, _, err := r.drv.closedLoop(ctx, w, "s", cfg.SerialRuns, 1, cfg.SerialDuration)
	if err != nil {
		return rep, err
	}
	rep.Serial = latencyOf(serial)

	r.progress("%s: saturation, %d in flight, up to %d runs or %s", w.scenario, cfg.Window, cfg.Runs, cfg.Duration)
	a, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	r.dep.resetPeaks()
	stopProfile := r.profile(string(w.scenario))
	lat, elapsed, err := r.drv.closedLoop(ctx, w, "t", cfg.Runs, cfg.Window, cfg.Duration)
	stopProfile()
	if err != nil {
		return rep, err
	}
	b, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	rep.Runs = len(lat)
	rep.RunsPerSec = float64(len(lat)) / elapsed.Seconds()
	rep.Saturated = latencyOf(lat)
	r.account(&rep, a, b, rep.Runs, rep.Runs)
	r.progress("%s: %.0f runs/s (%.2f of the bound), serial p50 %.2f ms", w.scenario, rep.RunsPerSec, rep.Bound.Ratio, rep.Serial.P50)
	return rep, nil
}

// account fills the figures that come from the counters between a and b,
// for runs runs of which starts started in the phase.
func (r *runner) account(rep *ScenarioReport, a, b sample, runs, starts int) {
	rep.Ops = opsPerRun(a.c, b.c, runs, starts)
	rep.Bound = boundOf(rep.Ops, r.raw, rep.RunsPerSec)
	rep.CPUByRole = map[string]float64{}
	for role, after := range b.use {
		var cpu time.Duration
		for i, u := range after {
			if i < len(a.use[role]) {
				cpu += u.CPU - a.use[role][i].CPU
			}
		}
		rep.CPUByRole[role] = ms(cpu) / float64(runs)
		rep.CPUPerRunMS += rep.CPUByRole[role]
	}
	if rep.CPUPerRunMS > 0 {
		rep.CPUBoundRunsPerSec = float64(runtime.NumCPU()) * 1000 / rep.CPUPerRunMS
	}
	rep.PeakRSSMB, rep.RSSOf = r.peak(b.use)
	// What the machine did besides this bench: the neighbours' load.
	if wall := b.at.Sub(a.at).Seconds(); wall > 0 && b.total > a.total {
		machine := float64(b.busy-a.busy) / float64(b.total-a.total) * float64(runtime.NumCPU())
		rep.OtherCores = max(0, machine-rep.CPUPerRunMS*float64(runs)/1000/wall)
	}
	rep.Conflicts = float64(b.stats.Conflicts-a.stats.Conflicts) / float64(runs)
	rep.Redeliveries = float64(b.stats.Redeliveries-a.stats.Redeliveries) / float64(runs)
	rep.Ops.DispatcherMsgs = float64(b.stats.Sent-a.stats.Sent) / float64(runs)
	rep.Ops.WorkerMsgs = float64(b.wstat.Sent-a.wstat.Sent) / float64(runs)
}

// peak is the dispatchers' largest peak resident set in MB, and what it
// is of.
func (r *runner) peak(use map[string][]procUsage) (float64, string) {
	role, of := roleDispatcher, "dispatcher process"
	if r.dep.setup.Mode == Single {
		role, of = roleBench, "whole process (server, dispatcher, worker, driver)"
	}
	var p int64
	for _, u := range use[role] {
		p = max(p, u.Peak)
	}
	return mb(p), of
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// heapProfiles writes a heap profile of every process when CPU profiles
// are asked for, named as they are with "-heap" after the scenario.
func (r *runner) heapProfiles(scenario string) {
	prefix := r.cfg.CPUProfile
	if prefix == "" {
		return
	}
	setup := strings.ReplaceAll(strings.ReplaceAll(r.dep.setup.Name(), " ", "-"), "=", "")
	path := func(role string) string { return fmt.Sprintf("%s-%s-%s-heap-%s.pprof", prefix, setup, scenario, role) }
	if err := writeHeapProfile(path(roleBench)); err != nil {
		r.progress("no heap profile of this process: %v", err)
	}
	for _, p := range r.dep.procs {
		file, err := filepath.Abs(path(p.role + "-" + p.name))
		if err == nil {
			_, err = p.call("heap " + file)
		}
		if err != nil {
			r.progress("no heap profile of %s %s: %v", p.role, p.name, err)
		}
	}
}

// profile starts a CPU profile of every process when asked to, and returns
// the function that stops them.
func (r *runner) profile(scenario string) func() {
	prefix := r.cfg.CPUProfile
	if prefix == "" {
		return func() {}
	}
	setup := strings.ReplaceAll(strings.ReplaceAll(r.dep.setup.Name(), " ", "-"), "=", "")
	path := func(role string) string { return fmt.Sprintf("%s-%s-%s-%s.pprof", prefix, setup, scenario, role) }
	var stops []func()
	if f, err := startProfile(nil, path(roleBench)); err == nil {
		stops = append(stops, func() { pprof.StopCPUProfile(); _ = f.Close() })
	} else {
		r.progress("no CPU profile of this process: %v", err)
	}
	for _, p := range r.dep.procs {
		file, err := filepath.Abs(path(p.role + "-" + p.name))
		if err == nil {
			_, err = p.call("profile " + file)
		}
		if err != nil {
			r.progress("no CPU profile of %s %s: %v", p.role, p.name, err)
			continue
		}
		stops = append(stops, func() { _, _ = p.call("profile-stop") })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
