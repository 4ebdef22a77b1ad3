package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
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
//
// (JETFLOW_RETENTION_SOAK_LARGE=N: every N-th run large, through the
// payload bucket; JETFLOW_RETENTION_SOAK_CSV=FILE: the samples as CSV.)
//	JETFLOW_RETENTION_REMOVAL_CPU=3000 go test ./integration/ -run TestRetentionRemovalCPU -v -timeout 30m
//	JETFLOW_RETENTION_CPU=3000 JETFLOW_RETENTION_CPU_ROUNDS=2 go test ./integration/ -run TestRetentionCPU -v -timeout 30m
//
// JETFLOW_RETENTION_CPU_MODE runs one mode of TestRetentionCPU (-1ns, 168h
// or 1s), and JETFLOW_RETENTION_CPU_INDEX=off without the run index;
// JETFLOW_RETENTION_PROFILE=FILE writes a CPU profile of each
// round's removals in TestRetentionRemovalCPU (FILE.1, FILE.2, ...).

// soakRate is how many one-task runs a second the soak starts.
const soakRate = 10

// soakLargeInput is the input of the soak's large runs
// (JETFLOW_RETENTION_SOAK_LARGE): over the default payload threshold, so
// that it, the invocation, the result and the record's values go through
// the payload bucket.
const soakLargeInput = 600 << 10

// soakStreams are the streams whose bytes and messages the soak samples.
var soakStreams = []string{"inputs", "runs", "timers", "index", "payloads", "tasks"}

// soakSample is one sample of the soak.
type soakSample struct {
	at      time.Duration
	phase   string
	started int
	bytes   map[string]uint64
	msgs    map[string]uint64
	rss     uint64
	heap    uint64
}

// TestRetentionSoak starts one-task runs at a steady rate with a retention
// of a minute and samples, every 30 s, the bytes and messages of the input
// stream, the run bucket, the timer stream, the index stream, the payload
// bucket and the task stream, and this process's resident memory (server,
// dispatcher, workers and client: one process) and Go heap. Stream bytes
// grow for a retention, then stay flat, and drain once the load stops
// (records after the retention, tombstones after theirs). Flat is judged
// on the load after three retentions (the index's after an hour more, its
// removed runs' heads' TTL): the mean of the second half of those samples
// within 10 % (and 64 KiB) of the first half's (soakSummary).
//
// JETFLOW_RETENTION_SOAK_LARGE=N makes every N-th run a blob run with a
// 600 KiB input, which goes by reference through the payload bucket;
// JETFLOW_RETENTION_SOAK_CSV=FILE writes every sample to FILE;
// JETFLOW_RETENTION_SOAK_HEAP=FILE writes heap profiles once warm
// (FILE.warm) and at the end of the load (FILE.end), to compare with
// go tool pprof -base.
func TestRetentionSoak(t *testing.T) {
	soak, err := time.ParseDuration(os.Getenv("JETFLOW_RETENTION_SOAK"))
	if err != nil {
		t.Skip("set JETFLOW_RETENTION_SOAK to the duration of the load (5m) to measure")
	}
	large := 0
	if v := os.Getenv("JETFLOW_RETENTION_SOAK_LARGE"); v != "" {
		if large, err = strconv.Atoi(v); err != nil || large < 0 {
			t.Fatalf("JETFLOW_RETENTION_SOAK_LARGE=%q: want a whole number N (every N-th run large), 0 for none", v)
		}
	}
	const retention = time.Minute
	limit := soak + retention + step.MinTombstone + 5*time.Minute
	// Warnings only: the captured log is kept in memory, and a line per
	// run would be the growth the soak samples.
	e := setup(t, options{dispatcher: dispatcher.Config{Retention: retention}, workers: 2, timeout: limit, logLevel: slog.LevelWarn})
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	streams := map[string]string{
		"inputs": e.names.InputStream(), "runs": e.names.KVStream(e.names.RunBucket()), "timers": e.names.TimerStream(),
		"index": e.names.IndexStream(), "payloads": e.names.ObjectStream(e.names.PayloadBucket()), "tasks": e.names.TaskStream(),
	}
	blob := strings.Repeat("0123456789abcdef", soakLargeInput/16)
	began := time.Now()
	n := 0
	var samples []soakSample
	sample := func(phase string) soakSample {
		s := soakSample{at: time.Since(began), phase: phase, started: n, bytes: map[string]uint64{}, msgs: map[string]uint64{}}
		for _, k := range soakStreams {
			st, err := e.f.JS.Stream(ctx, streams[k])
			if err != nil {
				t.Fatalf("stream %s (%s): %v", streams[k], k, err)
			}
			s.bytes[k], s.msgs[k] = st.CachedInfo().State.Bytes, st.CachedInfo().State.Msgs
		}
		s.rss, s.heap = residentBytes(t), heapBytes()
		t.Logf("%6.0fs %-6s runs %6d  inputs %9d B  runs %9d B  timers %8d B  index %9d B  payloads %9d B  rss %5.1f MiB  heap %5.1f MiB",
			s.at.Seconds(), phase, n, s.bytes["inputs"], s.bytes["runs"], s.bytes["timers"], s.bytes["index"], s.bytes["payloads"],
			float64(s.rss)/(1<<20), float64(s.heap)/(1<<20))
		samples = append(samples, s)
		return s
	}
	sample("start")
	tick := time.NewTicker(time.Second / soakRate)
	defer tick.Stop()
	every := time.NewTicker(30 * time.Second)
	defer every.Stop()
	warmed := false
	for end := time.Now().Add(soak); time.Now().Before(end); {
		select {
		case <-tick.C:
			n++
			id := "soak-" + strconv.Itoa(n)
			if large > 0 && n%large == 0 {
				err = e.f.Client.StartRun(ctx, "blob", id, map[string]any{"blob": blob})
			} else {
				err = e.f.Client.StartRun(ctx, "one", id, n)
			}
			if err != nil {
				t.Fatal(err)
			}
		case <-every.C:
			if s := sample("load"); !warmed && s.at >= 3*retention {
				warmed = true
				writeHeapProfile(t, "warm")
			}
		}
	}
	writeHeapProfile(t, "end")
	t.Logf("started %d runs in %s", n, soak)
	load := samples
	peak := soakPeaks(load)
	// Drained: every record removed after its retention, every tombstone
	// expired after its own (as long as the retention, at least a minute).
	deadline := time.Now().Add(retention + step.MinTombstone + 90*time.Second)
	var last soakSample
	for time.Now().Before(deadline) {
		<-every.C
		last = sample("drain")
		if last.bytes["inputs"] < peak.bytes["inputs"]/20 && last.bytes["runs"] < peak.bytes["runs"]/20 {
			break
		}
	}
	if path := os.Getenv("JETFLOW_RETENTION_SOAK_CSV"); path != "" {
		writeSoakCSV(t, path, samples)
	}
	soakSummary(t, load, last, 3*retention)
	if last.bytes["inputs"] >= peak.bytes["inputs"]/20 || last.bytes["runs"] >= peak.bytes["runs"]/20 {
		t.Errorf("not drained after the load: %v, peak %v", last.bytes, peak.bytes)
	}
}

// soakPeaks is the largest value of each series over samples.
func soakPeaks(samples []soakSample) soakSample {
	p := soakSample{bytes: map[string]uint64{}, msgs: map[string]uint64{}}
	for _, s := range samples {
		for k := range s.bytes {
			p.bytes[k], p.msgs[k] = max(p.bytes[k], s.bytes[k]), max(p.msgs[k], s.msgs[k])
		}
		p.rss, p.heap = max(p.rss, s.rss), max(p.heap, s.heap)
	}
	return p
}

// indexHeadTTL is how long the index keeps the head of a removed run
// after its tombstone expired (runindex's deletedHeadTTL): the index
// stream grows for that long before it can be flat.
const indexHeadTTL = time.Hour

// soakSummary logs each series' start, peak (and when), end of the load
// and last drain sample, and whether it stayed flat once warm: the mean
// of the second half of the load samples taken after warm within 10 %
// (and 64 KiB, or 64 messages) of the first half's. The index is warm
// only after its removed runs' heads expire too (indexHeadTTL later); a
// series with fewer than four samples after its warm-up is not judged.
// A stream's bytes that grow fail the test; messages and the process's
// memory are reported only.
func soakSummary(t *testing.T, load []soakSample, drained soakSample, warm time.Duration) {
	t.Helper()
	type series struct {
		name  string
		of    func(soakSample) uint64
		warm  time.Duration
		slack float64
		fail  bool
	}
	var all []series
	for _, k := range soakStreams {
		w := warm
		if k == "index" {
			w += indexHeadTTL
		}
		all = append(all,
			series{k + " bytes", func(s soakSample) uint64 { return s.bytes[k] }, w, 64 << 10, true},
			series{k + " msgs", func(s soakSample) uint64 { return s.msgs[k] }, w, 64, false})
	}
	all = append(all,
		series{"process rss", func(s soakSample) uint64 { return s.rss }, warm, 0, false},
		series{"go heap", func(s soakSample) uint64 { return s.heap }, warm, 0, false})
	mean := func(ss []soakSample, of func(soakSample) uint64) float64 {
		sum := 0.0
		for _, s := range ss {
			sum += float64(of(s))
		}
		return sum / float64(len(ss))
	}
	for _, se := range all {
		var pk uint64
		var pkAt time.Duration
		var steady []soakSample
		for _, s := range load {
			if v := se.of(s); v > pk {
				pk, pkAt = v, s.at
			}
			if s.phase == "load" && s.at >= se.warm {
				steady = append(steady, s)
			}
		}
		verdict := fmt.Sprintf("not judged: %d load samples after %s", len(steady), se.warm)
		flat := true
		if half := len(steady) / 2; half >= 2 {
			first, second := mean(steady[:half], se.of), mean(steady[half:], se.of)
			flat = second <= 1.10*first+se.slack
			ratio := 0.0
			if first > 0 {
				ratio = second / first
			}
			verdict = fmt.Sprintf("mean %.0f (%s-%s) -> %.0f (%s-%s), x%.3f: flat", first,
				steady[0].at.Round(time.Second), steady[half-1].at.Round(time.Second), second,
				steady[half].at.Round(time.Second), steady[len(steady)-1].at.Round(time.Second), ratio)
			if !flat {
				verdict = strings.TrimSuffix(verdict, "flat") + "GROWS"
			}
		}
		t.Logf("%-15s start %11d  peak %11d at %5.0fs  end of load %11d  drained %11d  %s",
			se.name, se.of(load[0]), pk, pkAt.Seconds(), se.of(load[len(load)-1]), se.of(drained), verdict)
		if !flat && se.fail {
			t.Errorf("%s grow under a steady load (%s)", se.name, verdict)
		}
	}
}

// writeSoakCSV writes the soak's samples, one row each.
func writeSoakCSV(t *testing.T, path string, samples []soakSample) {
	t.Helper()
	var b strings.Builder
	b.WriteString("t_s,phase,runs_started")
	for _, k := range soakStreams {
		fmt.Fprintf(&b, ",%s_bytes,%s_msgs", k, k)
	}
	b.WriteString(",rss_bytes,heap_bytes\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.0f,%s,%d", s.at.Seconds(), s.phase, s.started)
		for _, k := range soakStreams {
			fmt.Fprintf(&b, ",%d,%d", s.bytes[k], s.msgs[k])
		}
		fmt.Fprintf(&b, ",%d,%d\n", s.rss, s.heap)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeHeapProfile writes a heap profile to JETFLOW_RETENTION_SOAK_HEAP
// with suffix "."+when, if that is set.
func writeHeapProfile(t *testing.T, when string) {
	t.Helper()
	path := os.Getenv("JETFLOW_RETENTION_SOAK_HEAP")
	if path == "" {
		return
	}
	f, err := os.Create(path + "." + when)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// residentBytes is this process's resident set (VmRSS of
// /proc/self/status; 0 where there is none).
func residentBytes(t *testing.T) uint64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	return 0
}

// heapBytes is the Go heap in use (runtime.MemStats.HeapInuse).
func heapBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
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
			cfg := dispatcher.Config{Retention: retention, RemovalBucket: time.Second}
			// Without the run index, for its share of what retention costs.
			cfg.Index.Off = os.Getenv("JETFLOW_RETENTION_CPU_INDEX") == "off"
			e := setup(t, options{dispatcher: cfg})
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
			if !cfg.Index.Off {
				// The index caught up, removals included: its upkeep is
				// part of what retention costs.
				waitSlowly(t, time.Minute, "the index caught up", func() error {
					c, err := e.f.JS.Consumer(e.ctx, e.names.KVStream(e.names.RunBucket()), e.names.IndexerConsumer())
					if err != nil {
						return err
					}
					if info := c.CachedInfo(); info.NumPending+uint64(info.NumAckPending) > 0 { //nolint:gosec // a count
						return fmt.Errorf("%d changes pending, %d unacknowledged", info.NumPending, info.NumAckPending)
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
