package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// summary is what the harness prints at the end.
type summary struct {
	mode  string
	chaos time.Duration
	rate  float64
	res   *results
	kills map[string]int
	// failedStarts are process starts that failed and were retried;
	// clientRetries client calls the driver made again.
	failedStarts, clientRetries int
	// pauses are the event runs an operator's pause held; resets the
	// resets the driver saw taken.
	pauses, resets, resetsLost, redrivesLost int
	// slowest is the run that waited longest beyond its workflow's
	// median; stall the longest time no run settled.
	slowest      slowRun
	stall        time.Duration
	stallAt      time.Duration // since the chaos began
	medians      map[string][]time.Duration
	faultsByKind map[string][]*fault
	// byKind is the slowest recovery of runs that met faults of one kind
	// only, by that kind.
	byKind map[string]time.Duration
	// misbehavedRuns are left out of the recovery figures.
	misbehavedRuns int
}

type slowRun struct {
	id             string
	excess, took   time.Duration
	faults         []string
	started, ended time.Duration // since the chaos began
}

// summarize measures recovery over the driver's runs and counts the
// faults.
func (h *harness) summarize(d *driver, res *results, began, ended time.Time) *summary {
	s := &summary{
		mode: h.m.name, chaos: ended.Sub(began), rate: h.m.rate, res: res,
		kills: map[string]int{}, faultsByKind: map[string][]*fault{},
		failedStarts: h.failedStarts, clientRetries: int(d.retries.Load()), pauses: int(d.pauses.Load()), resets: int(d.resets.Load()), resetsLost: int(d.resetsLost.Load()), redrivesLost: int(d.redrivesLost.Load()),
		medians: map[string][]time.Duration{}, byKind: map[string]time.Duration{},
	}
	for _, f := range h.faults {
		s.kills[f.kind]++
		s.faultsByKind[f.kind] = append(s.faultsByKind[f.kind], f)
	}
	// Recovery is measured over the runs no worker misbehaved on: a
	// misbehaved attempt holds its run for the attempt timeout by design.
	var runs []*runLog
	for _, r := range d.all() {
		if r.misbehaved == 0 {
			runs = append(runs, r)
		} else {
			s.misbehavedRuns++
		}
	}
	// Each workflow's median of each segment is what a run takes without
	// faults, near enough: faults hit a minority of runs.
	bySeg := map[string][][]time.Duration{}
	for _, r := range runs {
		for i, seg := range r.segments() {
			for len(bySeg[r.wf.name]) <= i {
				bySeg[r.wf.name] = append(bySeg[r.wf.name], nil)
			}
			bySeg[r.wf.name][i] = append(bySeg[r.wf.name][i], seg)
		}
	}
	for name, segs := range bySeg {
		for _, ds := range segs {
			slices.Sort(ds)
			s.medians[name] = append(s.medians[name], ds[len(ds)/2])
		}
	}
	// A stall is a time no run at all settled.
	var settles []time.Time
	for _, r := range d.all() {
		if !r.ended.IsZero() && !r.stored.IsZero() {
			settles = append(settles, r.ended)
		}
	}
	for _, r := range runs {
		if r.ended.IsZero() || r.stored.IsZero() {
			continue
		}
		var met []string
		kinds := map[string]bool{}
		for _, f := range h.faults {
			if !f.at.Before(r.stored) && !f.at.After(r.ended) {
				met = append(met, fmt.Sprintf("%s %s at +%s", f.kind, f.target, f.at.Sub(began).Round(100*time.Millisecond)))
				kinds[f.kind] = true
			}
		}
		for i, seg := range r.segments() {
			excess := seg - s.medians[r.wf.name][i]
			if excess > s.slowest.excess {
				s.slowest = slowRun{
					id: r.id, excess: excess, took: seg, faults: met,
					started: r.stored.Sub(began), ended: r.ended.Sub(began),
				}
			}
			if len(kinds) == 1 {
				for k := range kinds {
					s.byKind[k] = max(s.byKind[k], excess)
				}
			}
		}
	}
	slices.SortFunc(settles, func(a, b time.Time) int { return a.Compare(b) })
	prev := began
	for _, t := range settles {
		if gap := t.Sub(prev); gap > s.stall {
			s.stall, s.stallAt = gap, prev.Sub(began)
		}
		prev = t
	}
	return s
}

// line is the one-line summary.
func (s *summary) line() string {
	r := s.res
	return fmt.Sprintf("chaos %s: %d runs in %s at %.1f/s, %d lost, %d wrong; kills: %d dispatcher, %d worker, %d nats; %d partitions; %d task pauses; "+
		"%d results applied twice, %d inputs applied twice; %d task executions, %d again after a fault; "+
		"%d timer fires applied, %d refused; %d events delivered; %d starts repeated by retried calls and refused; %d runs redriven; %d runs reset once done and ended again; "+
		"retention: %d runs removed, %d of them while not settled, %d checked from their archive; replay equal %d/%d; "+
		"misbehaved: %s; %d attempts timed out; %d runs stranded; slowest recovery %s; longest stall %s",
		s.mode, r.runs, s.chaos.Round(time.Second), s.rate, r.runs-r.settled, r.wrong,
		s.kills[kindDispatcher], s.kills[kindWorker], s.kills[kindNATS], s.kills[faultPartition], s.kills[faultTaskPause],
		r.appliedTwice, r.inputsTwice, r.executions, r.reexecuted,
		r.timersApplied, r.timersRefused, r.events, r.startsRepeated, r.redriven, r.reset,
		r.removed, r.removedUnsettled, r.archivedChecked, r.replayEqual, r.runs,
		byKind(r.misbehaved), r.timedOut, len(r.stranded),
		s.slowest.excess.Round(100*time.Millisecond), s.stall.Round(100*time.Millisecond))
}

// byKind lists counts by misbehaviour, as "3 nak, 2 drop, …".
func byKind(n map[string]int) string {
	var out []string
	for _, kind := range misKinds {
		out = append(out, fmt.Sprintf("%d %s", n[kind], kind))
	}
	return strings.Join(out, ", ")
}

// details are the figures behind the line.
func (s *summary) details() []string {
	var out []string
	names := make([]string, 0, len(s.medians))
	for name := range s.medians {
		names = append(names, name)
	}
	slices.Sort(names)
	var med []string
	for _, name := range names {
		var ds []string
		for _, d := range s.medians[name] {
			ds = append(ds, d.Round(time.Millisecond).String())
		}
		med = append(med, name+" "+strings.Join(ds, "+"))
	}
	out = append(out, "median latency per workflow (stored start to stored end; for event runs start to waiting + stored event to end): "+strings.Join(med, ", "))
	sl := s.slowest
	out = append(out, fmt.Sprintf("slowest recovery: run %s took %s, %s beyond its workflow's median (started +%s, settled +%s; faults meanwhile: %s)",
		sl.id, sl.took.Round(time.Millisecond), sl.excess.Round(time.Millisecond), sl.started.Round(100*time.Millisecond),
		sl.ended.Round(100*time.Millisecond), strings.Join(sl.faults, ", ")))
	var kinds []string
	for _, kind := range []string{kindDispatcher, kindWorker, kindNATS, faultPartition, faultTaskPause} {
		if d, ok := s.byKind[kind]; ok {
			kinds = append(kinds, fmt.Sprintf("%s %s", kind, d.Round(100*time.Millisecond)))
		}
	}
	out = append(out, "slowest recovery of runs that met faults of one kind only: "+strings.Join(kinds, ", "))
	out = append(out, fmt.Sprintf("longest stall: no run's settled record stored for %s from +%s", s.stall.Round(time.Millisecond), s.stallAt.Round(100*time.Millisecond)))
	for _, kind := range []string{kindDispatcher, kindWorker, kindNATS, faultPartition, faultTaskPause} {
		var downs []string
		for _, f := range s.faultsByKind[kind] {
			d := "never back"
			if !f.back.IsZero() {
				d = f.back.Sub(f.at).Round(100 * time.Millisecond).String()
			}
			downs = append(downs, f.target+" "+d)
		}
		if len(downs) > 0 {
			out = append(out, fmt.Sprintf("%s faults (target, time until it served again): %s", kind, strings.Join(downs, ", ")))
		}
	}
	out = append(out, fmt.Sprintf("task attempts run again on a first delivery: %d; process starts retried: %d; client calls retried: %d; event runs paused before their events and resumed after: %d",
		s.res.redelivered1, s.failedStarts, s.clientRetries, s.pauses))
	r := s.res
	out = append(out, fmt.Sprintf("retention (workflows %s, %s after settling, archived): %d runs removed, %d while the last record the watcher saw (of %d) was not settled; %d checked from their archive, %d of them removed before the driver saw them settle; %d inputs a removed run never took (refused as a removed run's); resets taken: %d, lost to the run's removal: %d; redrives lost to the run's removal: %d; tombstones the stream's leader kept past their TTL, which the index shows deleted: %d",
		strings.Join(retained(), ", "), retention, r.removed, r.removedUnsettled, r.watched, r.archivedChecked, r.removedUnseen, r.afterRemoval, s.resets, s.resetsLost, s.redrivesLost, r.tombstonesKept))
	out = append(out, fmt.Sprintf("misbehaviours of the protocol worker, attempts (deliveries): %s (%s); %d NAKed invocations left in the task stream; the recovery figures leave out the %d runs they hit",
		byKind(r.misbehaved), byKind(r.misDeliveries), r.naksLeft, s.misbehavedRuns))
	out = append(out, fmt.Sprintf("attempts timed out (TASK_TIMEOUT): %d, %d of them misbehaved on, %d after a fault",
		r.timedOut, r.timedOutMis, r.timedOut-r.timedOutMis))
	out = append(out, fmt.Sprintf("runs stranded: %d; states checked: %d stepped through, %d records sampled mid-run, %d unsettled records at the end (the canaries; the control %s found stranded: %v)",
		len(r.stranded), r.statesStepped, r.sampled, r.endChecked, canaryCut, r.controlFound))
	return out
}
