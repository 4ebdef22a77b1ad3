package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jetflow/jetflow/engine/run"
)

// parkWindow is how many starts or events are in flight while parking or
// waking runs.
const parkWindow = 256

// parked parks cfg.ParkedRuns runs in a wait, measures what they cost at
// rest, then sends every event and measures how fast they all end.
func (r *runner) parked(ctx context.Context, w workload) (ScenarioReport, error) {
	n := r.cfg.ParkedRuns
	rep := ScenarioReport{Scenario: w.scenario, Window: parkWindow}
	p := &ParkedReport{Runs: n}
	rep.Parked = p
	idOf := func(i int) string { return w.code + "-p-" + strconv.Itoa(i) }
	indexOf := func(id string) int {
		i, err := strconv.Atoi(strings.TrimPrefix(id, w.code+"-p-"))
		if err != nil || i < 0 || i >= n || !strings.HasPrefix(id, w.code+"-p-") {
			return -1
		}
		return i
	}
	sent := make([]atomic.Int64, n)
	// The runs may take as long as they need while they keep ending: the
	// bench gives up when none has for RunTimeout (a deadline sized to
	// the count failed large counts on a loaded machine that was still
	// making progress, and measured nothing).
	stall := r.cfg.RunTimeout
	defer r.drv.hook.Store(nil)
	// watch counts the runs that announce status want, and returns the
	// function that waits for all of them and their latencies from sent.
	watch := func(want string) func(what string) ([]time.Duration, error) {
		seen := make([]atomic.Bool, n)
		lat := make([]time.Duration, n)
		var count atomic.Int64
		all := make(chan struct{})
		hook := func(id string, a announcement) {
			i := indexOf(id)
			if i < 0 || a.status != want || seen[i].Swap(true) {
				return
			}
			if t := sent[i].Load(); t != 0 {
				lat[i] = a.at.Sub(time.Unix(0, t))
			}
			if count.Add(1) == int64(n) {
				close(all)
			}
		}
		r.drv.hook.Store(&hook)
		return func(what string) ([]time.Duration, error) {
			began, checked := time.Now(), false
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			last, moved := count.Load(), time.Now()
			for {
				select {
				case <-all:
					return lat, nil
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case now := <-tick.C:
					if c := count.Load(); c != last {
						last, moved = c, now
						continue
					} else if now.Sub(moved) < stall {
						continue
					}
					// An announcement is a hint (a loaded bench can miss
					// a few); the record is the truth. Read the records
					// of the runs not heard from, once.
					if !checked {
						checked = true
						for i := range n {
							if seen[i].Load() {
								continue
							}
							st, err := r.drv.cl.Status(ctx, idOf(i))
							if err == nil && st.Status == want {
								hook(idOf(i), announcement{status: want, at: now})
							}
						}
						if count.Load() != last {
							last, moved = count.Load(), now
							continue
						}
					}
					return nil, fmt.Errorf("bench: parked: %d of %d runs %s after %s, none for the last %s",
						count.Load(), n, what, now.Sub(began).Round(time.Second), stall)
				}
			}
		}
	}

	r.progress("%s: parking %d runs", w.scenario, n)
	a, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	diskA := diskBytes(r.dep.dir)
	r.dep.resetPeaks()
	p.RSSBeforeMB = r.rss(a.use)
	wait := watch(string(run.StatusWaiting))
	began := time.Now()
	err = fire(ctx, n, parkWindow, func(ctx context.Context, i int) error {
		return r.drv.cl.StartRun(ctx, w.workflow, idOf(i), nil)
	})
	if err == nil {
		_, err = wait("waiting")
	}
	if err != nil {
		return rep, err
	}
	p.ParkPerSec = float64(n) / time.Since(began).Seconds()
	b, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	parkedOps := opsPerRun(a.c, b.c, n, n)
	p.KVBytesPerRun, p.InputBytesPerRun = parkedOps.KVBytes, parkedOps.InputBytes
	p.DiskBytesPerRun = float64(diskBytes(r.dep.dir)-diskA) / float64(n)
	p.RSSParkedMB = r.rss(b.use)
	p.PeakRSSMB, p.RSSOf = r.peak(b.use)
	p.HeapParkedMB = float64(b.stats.HeapInuse) / (1 << 20)
	if r.dep.setup.Mode == Single {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		p.HeapParkedMB = float64(m.HeapInuse) / (1 << 20)
	}
	r.progress("%s: %d parked at %.0f/s; %.0f KV bytes per run, %.1f MB resident", w.scenario, n, p.ParkPerSec, p.KVBytesPerRun, p.RSSParkedMB)
	r.heapProfiles(string(w.scenario))

	r.progress("%s: sending %d events", w.scenario, n)
	wait = watch(string(run.StatusDone))
	stopProfile := r.profile(string(w.scenario))
	began = time.Now()
	err = fire(ctx, n, parkWindow, func(ctx context.Context, i int) error {
		sent[i].Store(time.Now().UnixNano())
		return r.drv.cl.SendEvent(ctx, idOf(i), wakeEvent, nil)
	})
	var lat []time.Duration
	if err == nil {
		lat, err = wait("done")
	}
	stopProfile()
	if err != nil {
		return rep, err
	}
	elapsed := time.Since(began)
	c, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	p.ResumePerSec = float64(n) / elapsed.Seconds()
	p.Resume = latencyOf(lat)
	rep.Runs, rep.RunsPerSec, rep.Saturated = n, p.ResumePerSec, p.Resume
	r.account(&rep, b, c, n, 0)
	r.progress("%s: resumed at %.0f/s (%.2f of the bound)", w.scenario, p.ResumePerSec, rep.Bound.Ratio)
	return rep, nil
}

// rss is the dispatchers' largest current resident set in MB (Single:
// the process's).
func (r *runner) rss(use map[string][]procUsage) float64 {
	role := roleDispatcher
	if r.dep.setup.Mode == Single {
		role = roleBench
	}
	var v int64
	for _, u := range use[role] {
		v = max(v, u.RSS)
	}
	return mb(v)
}
