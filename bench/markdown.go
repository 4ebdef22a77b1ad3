package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Markdown writes the report as markdown tables: the targets, then per
// scenario the rate against its bound, latency, CPU, memory, storage and
// durable operations, then the parked runs and the raw figures.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	h := r.Host
	fmt.Fprintf(&b, "Measured %s on %s/%s, %d CPUs (GOMAXPROCS %d), %s, nats-server %s; load average %.2f %.2f %.2f before, %.2f %.2f %.2f after; %.0f s in all.",
		r.Started.Format("2006-01-02 15:04 UTC"), h.OS, h.Arch, h.CPUs, h.GOMAXPROCS, h.GoVersion, h.NATSServer,
		h.LoadBefore[0], h.LoadBefore[1], h.LoadBefore[2], h.LoadAfter[0], h.LoadAfter[1], h.LoadAfter[2], r.Seconds)
	if r.Short {
		b.WriteString(" **Short mode: tiny counts, the figures mean nothing.**")
	}
	c := r.Config
	fmt.Fprintf(&b, "\nSaturation: %d runs in flight, up to %d runs or %.0f s per scenario after %d warm-up runs; concurrency 1: up to %d runs; %d parked runs; workers of concurrency %d that echo their input.",
		c.Window, c.Runs, c.DurationSeconds, c.Warmup, c.SerialRuns, c.ParkedRuns, c.WorkerConcurrency)
	if _, sc := r.find(Timers, func(SetupReport) bool { return true }); sc != nil {
		fmt.Fprintf(&b, " Timers: %d runs asleep on timers due at one instant; lateness is when the run's record left the wait minus its due time.", c.TimerRuns)
	}
	if _, sc := r.find(ConsoleIndex, func(SetupReport) bool { return true }); sc != nil {
		fmt.Fprintf(&b, " Console: a fresh index of %d stored runs, then every page of the run list.", c.ConsoleRuns)
	}
	b.WriteString(" The bound is the rate the run's durable operations allow at the raw rates measured on the same server; the floor, its latency one run at a time." +
		" CPU is every process's (server included); CPU-bound runs/s is CPUs ÷ CPU per run, the rate if the bench had the machine to itself;" +
		" others' load is the cores other programs used meanwhile.\n\n")

	if len(r.Targets) > 0 {
		table(&b, []string{"target", "want", "measured", "met"}, func(row func(...string)) {
			for _, t := range r.Targets {
				row(t.Name, t.Want, t.Measured, yesNo(t.Met))
			}
		})
	}

	b.WriteString("### Scenarios\n\n")
	table(&b, []string{"setup", "scenario", "runs/s", "bound runs/s", "of bound", "c=1 p50/p90/p99 ms", "floor ms", "saturated p50/p90/p99 ms", "CPU ms/run", "CPU-bound runs/s", "peak RSS MB", "KV B/run", "stream B/run"},
		func(row func(...string)) {
			r.eachRun(func(s SetupReport, sc ScenarioReport) {
				serial := "–"
				name := string(sc.Scenario)
				switch {
				case sc.Parked != nil:
					name += " (resume)"
				case sc.Timers != nil:
					name += " (lateness)"
				default:
					serial = lat(sc.Serial)
				}
				row(s.Setup, name, f0(sc.RunsPerSec), f0(sc.Bound.RunsPerSec), f2(sc.Bound.Ratio), serial, f2(sc.Bound.LatencyMS),
					lat(sc.Saturated), f2(sc.CPUPerRunMS), f0(sc.CPUBoundRunsPerSec), f0(sc.PeakRSSMB), f0(sc.Ops.KVBytes), f0(sc.Ops.InputBytes+sc.Ops.TaskBytes))
			})
		})

	b.WriteString("### Durable operations per run\n\n")
	table(&b, []string{"setup", "scenario", "input pubs", "task pubs", "KV creates", "KV updates", "timer pubs", "index pubs", "to dispatchers", "to workers", "to indexers", "all durable", "API requests", "msgs sent by dispatchers / workers", "CAS conflicts", "redeliveries", "CPU ms/run by role", "others' load, cores"},
		func(row func(...string)) {
			r.eachRun(func(s SetupReport, sc ScenarioReport) {
				o := sc.Ops
				row(s.Setup, string(sc.Scenario), f2(o.InputPublishes), f2(o.TaskPublishes), f2(o.KVCreates), f2(o.KVUpdates),
					f2(o.TimerPublishes), f2(o.IndexPublishes), f2(o.Dispatched), f2(o.Served), f2(o.Indexed), f2(o.Durable()), f2(o.APIRequests), f2(o.DispatcherMsgs)+" / "+f2(o.WorkerMsgs), f2(sc.Conflicts), f2(sc.Redeliveries), roles(sc.CPUByRole), f2(sc.OtherCores))
			})
		})

	b.WriteString("### Parked runs\n\n")
	table(&b, []string{"setup", "runs", "parked/s", "resumed/s", "resume p50/p90/p99 ms", "RSS before / parked / peak MB", "heap MB", "KV B/run", "input stream B/run", "disk B/run", "memory of"},
		func(row func(...string)) {
			r.each(func(s SetupReport, sc ScenarioReport) {
				if p := sc.Parked; p != nil {
					row(s.Setup, fmt.Sprint(p.Runs), f0(p.ParkPerSec), f0(p.ResumePerSec), lat(p.Resume),
						fmt.Sprintf("%.0f / %.0f / %.0f", p.RSSBeforeMB, p.RSSParkedMB, p.PeakRSSMB), f0(p.HeapParkedMB),
						f0(p.KVBytesPerRun), f0(p.InputBytesPerRun), f0(p.DiskBytesPerRun), p.RSSOf)
				}
			})
		})

	b.WriteString("### Partition handover after a SIGKILL\n\n")
	b.WriteString("Runs start every 2 ms; the dispatcher process owning the most partitions is killed; each of its partitions waits from the kill to its first input applied afterwards.\n\n")
	table(&b, []string{"setup", "partitions", "killed partitions", "pause p50 ms", "pause p99 ms", "max ms", "missed", "ack wait ms"},
		func(row func(...string)) {
			for _, s := range r.Setups {
				if h := s.Handover; h != nil {
					maxMS := 0.0
					if n := len(h.PauseMS); n > 0 {
						maxMS = h.PauseMS[n-1]
					}
					row(s.Setup, fmt.Sprint(h.Partitions), fmt.Sprint(h.Killed), f0(h.P50), f0(h.P99), f0(maxMS), fmt.Sprint(h.Missed), f0(h.AckWaitMS))
				}
			}
		})

	b.WriteString("### Timers due at once\n\n")
	table(&b, []string{"setup", "runs", "started in s", "lead ms", "due within ms", "armed late", "fired p50/p90/p99 ms", "left the wait p50/p90/p99 ms", "max ms", "early", "drained/s"},
		func(row func(...string)) {
			r.each(func(s SetupReport, sc ScenarioReport) {
				if t := sc.Timers; t != nil {
					row(s.Setup, fmt.Sprint(t.Runs), f2(t.StartSeconds), f0(t.LeadMS), f0(t.DueSpreadMS), fmt.Sprint(t.ArmedLate),
						lat(t.Fired), lat(t.Left), f0(t.Left.Max), fmt.Sprint(t.Early), f0(t.DrainedPerSec))
				}
			})
		})

	payloadSection(&b, r)
	b.WriteString("### Console index\n\n")
	table(&b, []string{"setup", "runs", "B/record", "stored in s", "indexed in s", "indexed/s", "pages", "all pages in s", "a page p50/p90/p99 ms", "complete"},
		func(row func(...string)) {
			r.each(func(s SetupReport, sc ScenarioReport) {
				if c := sc.Console; c != nil {
					row(s.Setup, fmt.Sprint(c.Runs), fmt.Sprint(c.RecordBytes), f2(c.StoreSeconds), f2(c.IndexSeconds), f0(c.IndexedPerSec),
						fmt.Sprint(c.WalkPages), f2(c.WalkSeconds), lat(c.Walk), yesNo(c.Complete()))
				}
			})
		})
	table(&b, []string{"setup", "page of the run list", "matched", "asked", "p50/p90/p99 ms"}, func(row func(...string)) {
		r.each(func(s SetupReport, sc ScenarioReport) {
			if c := sc.Console; c != nil {
				for _, q := range c.Queries {
					query := q.Query
					if query == "" {
						query = "(first page)"
					}
					row(s.Setup, "`"+query+"`", fmt.Sprint(q.Matched), fmt.Sprint(q.Latency.N), lat(q.Latency))
				}
			}
		})
	})

	fmt.Fprintf(&b, "### Raw JetStream on the same server\n\n%d-byte messages, %d-byte KV values; latency one at a time, rates with %d and %d at once, the bound taking the better (consumers: one, acking each message).\n\n", rawMsgBytes, rawValueBytes, rawParallel, rawWide)
	table(&b, []string{"setup", "operation", "at once", "n", "ops/s", "p50 µs", "p99 µs"}, func(row func(...string)) {
		for _, s := range r.Setups {
			for _, op := range s.Raw {
				p50, p99 := "–", "–"
				if op.P50us > 0 {
					p50, p99 = f0(op.P50us), f0(op.P99us)
				}
				row(s.Setup, op.Name, fmt.Sprint(op.Concurrency), fmt.Sprint(op.N), f0(op.PerSec), p50, p99)
			}
		}
	})
	_, err := io.WriteString(w, b.String())
	return err
}

// each calls fn for every scenario measured, console-index included.
func (r *Report) each(fn func(SetupReport, ScenarioReport)) {
	for _, s := range r.Setups {
		for _, sc := range s.Scenarios {
			fn(s, sc)
		}
	}
}

// eachRun is each without console-index, which runs no runs.
func (r *Report) eachRun(fn func(SetupReport, ScenarioReport)) {
	r.each(func(s SetupReport, sc ScenarioReport) {
		if sc.Console == nil && sc.Payload == nil {
			fn(s, sc)
		}
	})
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// table writes a markdown table; fill calls row once per row.
func table(b *strings.Builder, head []string, fill func(row func(...string))) {
	line := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	fill(func(cells ...string) { line(cells) })
	b.WriteString("\n")
}

func lat(l Latency) string {
	if l.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", l.P50, l.P90, l.P99)
}

func roles(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// payloadSection is the large-payload scenario's table, when it ran.
func payloadSection(b *strings.Builder, r *Report) {
	if _, sc := r.find(LargePayload, func(SetupReport) bool { return true }); sc == nil {
		return
	}
	b.WriteString("### Large payloads\n\nOne-task runs one at a time whose input and result are each the size given; MB/s is both bodies over the start-to-done time.\n\n")
	table(b, []string{"setup", "size", "travels", "runs", "MB/s", "p50/p90/p99 ms"}, func(row func(...string)) {
		r.each(func(s SetupReport, sc ScenarioReport) {
			if p := sc.Payload; p != nil {
				row(s.Setup, fmt.Sprint(p.ByRef.Size), "by reference", fmt.Sprint(p.ByRef.Runs), f2(p.ByRef.MBPerSec), lat(p.ByRef.Latency))
				row(s.Setup, fmt.Sprint(p.Inline.Size), "inline", fmt.Sprint(p.Inline.Runs), f2(p.Inline.MBPerSec), lat(p.Inline.Latency))
			}
		})
	})
}
