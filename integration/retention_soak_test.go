package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/step"
)

// The measurements of retention (docs/PERFORMANCE.md, "Retention"). They
// take minutes, so they run only when asked:
//
//	JETFLOW_RETENTION_SOAK=30m go test ./integration/ -run TestRetentionSoak -v -timeout 50m
//	JETFLOW_RETENTION_REMOVAL_CPU=3000 go test ./integration/ -run TestRetentionRemovalCPU -v -timeout 30m
//	JETFLOW_RETENTION_CPU=3000 JETFLOW_RETENTION_CPU_ROUNDS=2 go test ./integration/ -run TestRetentionCPU -v -timeout 30m
//
// JETFLOW_RETENTION_CPU_MODE runs one mode of TestRetentionCPU (-1ns, 168h
// or 1s); JETFLOW_RETENTION_PROFILE=FILE writes a CPU profile of each
// round's removals in TestRetentionRemovalCPU (FILE.1, FILE.2, ...).

// soakRate is how many one-task runs a second the soak starts.
const soakRate = 10

// TestRetentionSoak starts one-task runs at a steady rate with a retention
// of a minute and samples the bytes of the input stream, the run bucket
// and the timer stream: they grow for a retention, then stay flat, and
// drain once the load stops (records after the retention, tombstones after
// theirs).
func TestRetentionSoak(t *testing.T) {
	soak, err := time.ParseDuration(os.Getenv("JETFLOW_RETENTION_SOAK"))
	if err != nil {
		t.Skip("set JETFLOW_RETENTION_SOAK to the duration of the load (5m) to measure")
	}
	const retention = time.Minute
	limit := soak + retention + step.MinTombstone + 5*time.Minute
	e := setup(t, options{dispatcher: dispatcher.Config{Retention: retention}, workers: 2, timeout: limit})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	streams := map[string]string{"inputs": e.names.InputStream(), "runs": e.names.KVStream(e.names.RunBucket()), "timers": e.names.TimerStream()}
	bytesOf := func() map[string]uint64 {
		out := map[string]uint64{}
		for k, name := range streams {
			s, err := e.f.JS.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = s.CachedInfo().State.Bytes
		}
		return out
	}
	began := time.Now()
	sample := func(phase string) map[string]uint64 {
		b := bytesOf()
		t.Logf("%6.0fs %-6s inputs %9d B  runs %9d B  timers %9d B", time.Since(began).Seconds(), phase, b["inputs"], b["runs"], b["timers"])
		return b
	}
	peak := map[string]uint64{}
	keepPeak := func(b map[string]uint64) {
		for k, v := range b {
			peak[k] = max(peak[k], v)
		}
	}
	keepPeak(sample("start"))
	tick := time.NewTicker(time.Second / soakRate)
	defer tick.Stop()
	every := time.NewTicker(30 * time.Second)
	defer every.Stop()
	n := 0
	for end := time.Now().Add(soak); time.Now().Before(end); {
		select {
		case <-tick.C:
			n++
			if err := e.f.Client.StartRun(ctx, "one", "soak-"+strconv.Itoa(n), n); err != nil {
				t.Fatal(err)
			}
		case <-every.C:
			keepPeak(sample("load"))
		}
	}
	t.Logf("started %d runs in %s", n, soak)
	// Drained: every record removed after its retention, every tombstone
	// expired after its own (as long as the retention, at least a minute).
	deadline := time.Now().Add(retention + step.MinTombstone + 90*time.Second)
	var last map[string]uint64
	for time.Now().Before(deadline) {
		<-every.C
		last = sample("drain")
		if last["inputs"] < peak["inputs"]/20 && last["runs"] < peak["runs"]/20 {
			break
		}
	}
	t.Logf("peak: inputs %d B, runs %d B, timers %d B", peak["inputs"], peak["runs"], peak["timers"])
	if last["inputs"] >= peak["inputs"]/20 || last["runs"] >= peak["runs"]/20 {
		t.Errorf("not drained after the load: %v, peak %v", last, peak)
	}
}

// TestRetentionCPU measures the CPU time of this process (server,
// dispatcher, worker, client) per one-task run with retention off and
// with a retention of a second (every run removed within the round),
// in interleaved rounds.
func TestRetentionCPU(t *testing.T) {
	runs, err := strconv.Atoi(os.Getenv("JETFLOW_RETENTION_CPU"))
	if err != nil {
		t.Skip("set JETFLOW_RETENTION_CPU to the runs per round (2000) to measure")
	}
	// Off; on with the removal not yet due (the schedule only); on with
	// every run removed within the round.
	modes := []time.Duration{-1, dispatcher.DefaultRetention, time.Second}
	if only := os.Getenv("JETFLOW_RETENTION_CPU_MODE"); only != "" {
		// One mode (off, -1ns; not due, 168h; removed, 1s), for a profile.
		d, err := time.ParseDuration(only)
		if err != nil {
			t.Fatal(err)
		}
		modes = []time.Duration{d}
	}
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("JETFLOW_RETENTION_CPU_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for round := range rounds * len(modes) {
		retention := modes[round%len(modes)]
		t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) {
			e := setup(t, options{dispatcher: dispatcher.Config{Retention: retention, RemovalBucket: time.Second}})
			before := cpuTime(t)
			start := time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 64)
			for i := range runs {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					id := fmt.Sprintf("cpu-%d", i)
					e.start(t, "one", id, i)
					e.wait(t, id, time.Minute)
				})
			}
			wg.Wait()
			if retention == time.Second {
				// Every run removed: its history purged (polled slowly: the
				// polls are in the measured CPU).
				waitSlowly(t, time.Minute, "every run removed", func() error {
					s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
					if err != nil {
						return err
					}
					if n := s.CachedInfo().State.Msgs; n > 0 {
						return fmt.Errorf("%d inputs left", n)
					}
					return nil
				})
			}
			used := cpuTime(t) - before
			t.Logf("retention %v: %d runs, %s CPU, %.0f µs CPU per run, %s wall", retention, runs, used, float64(used.Microseconds())/float64(runs), time.Since(start).Round(time.Millisecond))
		})
	}
}

// waitSlowly is natstest.WaitFor polling every 200ms.
func waitSlowly(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(timeout); ; <-tick.C {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not reached after %s: %v", what, timeout, err)
		}
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRetentionRemovalCPU prices the removals alone against the runs, in
// the same process under the same load: one-task runs with a retention
// longer than it takes to run them, then the CPU of this process while
// the removals happen, less what it spends idle (measured between the
// last run and the first removal).
//
//	JETFLOW_RETENTION_REMOVAL_CPU=3000 go test ./integration/ -run TestRetentionRemovalCPU -v -timeout 30m
func TestRetentionRemovalCPU(t *testing.T) {
	runs, err := strconv.Atoi(os.Getenv("JETFLOW_RETENTION_REMOVAL_CPU"))
	if err != nil {
		t.Skip("set JETFLOW_RETENTION_REMOVAL_CPU to the runs per round (3000) to measure")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("JETFLOW_RETENTION_CPU_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	const retention = 90 * time.Second
	for round := range rounds {
		t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) {
			e := setup(t, options{dispatcher: dispatcher.Config{Retention: retention, RemovalBucket: time.Second}, timeout: 10 * time.Minute})
			msgs := func() uint64 {
				s, err := e.f.JS.Stream(e.ctx, e.names.InputStream())
				if err != nil {
					t.Fatal(err)
				}
				return s.CachedInfo().State.Msgs
			}
			c0, t0 := cpuTime(t), time.Now()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 64)
			for i := range runs {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					id := fmt.Sprintf("cpu-%d", i)
					e.start(t, "one", id, i)
					e.wait(t, id, time.Minute)
				})
			}
			wg.Wait()
			c1, t1 := cpuTime(t), time.Now()
			if t1.Sub(t0) > retention-10*time.Second {
				t.Fatalf("the runs took %s, too close to the retention (%s) to tell runs from removals", t1.Sub(t0), retention)
			}
			full := msgs()
			waitSlowly(t, 2*retention, "the first removal", func() error {
				if msgs() == full {
					return errors.New("none yet")
				}
				return nil
			})
			c2, t2 := cpuTime(t), time.Now()
			if path := os.Getenv("JETFLOW_RETENTION_PROFILE"); path != "" {
				// A CPU profile of the removals alone.
				f, err := os.Create(fmt.Sprintf("%s.%d", path, round+1))
				if err != nil {
					t.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					t.Fatal(err)
				}
				defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
			}
			waitSlowly(t, 2*retention, "every run removed", func() error {
				if n := msgs(); n > 0 {
					return fmt.Errorf("%d inputs left", n)
				}
				return nil
			})
			c3, t3 := cpuTime(t), time.Now()
			idle := float64(c2-c1) / float64(t2.Sub(t1))
			removal := float64(c3-c2) - idle*float64(t3.Sub(t2))
			perRun := float64((c1 - c0).Microseconds()) / float64(runs)
			perRemoval := removal / 1e3 / float64(runs)
			t.Logf("runs: %.0f µs CPU per run (%s wall); idle %.1f%% of a core; removals: %.0f µs CPU per run (%s wall), %.1f%% of a run",
				perRun, t1.Sub(t0).Round(time.Millisecond), 100*idle, perRemoval, t3.Sub(t2).Round(time.Millisecond), 100*perRemoval/perRun)
		})
	}
}
