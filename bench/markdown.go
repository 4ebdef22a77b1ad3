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
	b.WriteString(" The bound is the rate the run's durable operations allow at the raw rates measured on the same server; the floor, its latency one run at a time." +
		" CPU is every process's (server included); CPU-bound runs/s is CPUs ÷ CPU per run, the rate if the bench had the machine to itself;" +
		" others' load is the cores other programs used meanwhile.\n\n")

	if len(r.Targets) > 0 {
		table(&b, []string{"target", "want", "measured", "met"}, func(row func(...string)) {
			for _, t := range r.Targets {
				met := "no"
				if t.Met {
					met = "yes"
				}
				row(t.Name, t.Want, t.Measured, met)
			}
		})
	}

	b.WriteString("### Scenarios\n\n")
	table(&b, []string{"setup", "scenario", "runs/s", "bound runs/s", "of bound", "c=1 p50/p90/p99 ms", "floor ms", "saturated p50/p90/p99 ms", "CPU ms/run", "CPU-bound runs/s", "peak RSS MB", "KV B/run", "stream B/run"},
		func(row func(...string)) {
			r.each(func(s SetupReport, sc ScenarioReport) {
				serial := "–"
				name := string(sc.Scenario)
				if sc.Parked != nil {
					name += " (resume)"
				} else {
					serial = lat(sc.Serial)
				}
				row(s.Setup, name, f0(sc.RunsPerSec), f0(sc.Bound.RunsPerSec), f2(sc.Bound.Ratio), serial, f2(sc.Bound.LatencyMS),
					lat(sc.Saturated), f2(sc.CPUPerRunMS), f0(sc.CPUBoundRunsPerSec), f0(sc.PeakRSSMB), f0(sc.Ops.KVBytes), f0(sc.Ops.InputBytes+sc.Ops.TaskBytes))
			})
		})

	b.WriteString("### Durable operations per run\n\n")
	table(&b, []string{"setup", "scenario", "input pubs", "task pubs", "KV creates", "KV updates", "to dispatchers", "to workers", "all durable", "API requests", "msgs sent by dispatchers / workers", "CAS conflicts", "redeliveries", "CPU ms/run by role", "others' load, cores"},
		func(row func(...string)) {
			r.each(func(s SetupReport, sc ScenarioReport) {
				o := sc.Ops
				row(s.Setup, string(sc.Scenario), f2(o.InputPublishes), f2(o.TaskPublishes), f2(o.KVCreates), f2(o.KVUpdates),
					f2(o.Dispatched), f2(o.Served), f2(o.Durable()), f2(o.APIRequests), f2(o.DispatcherMsgs)+" / "+f2(o.WorkerMsgs), f2(sc.Conflicts), f2(sc.Redeliveries), roles(sc.CPUByRole), f2(sc.OtherCores))
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

	fmt.Fprintf(&b, "### Raw JetStream on the same server\n\n%d-byte messages, %d-byte KV values; latency one at a time, rates with %d at once (consumers: one, acking each message).\n\n", rawMsgBytes, rawValueBytes, rawParallel)
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

func (r *Report) each(fn func(SetupReport, ScenarioReport)) {
	for _, s := range r.Setups {
		for _, sc := range s.Scenarios {
			fn(s, sc)
		}
	}
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
