package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
)

// The timers scenario puts many runs to sleep on timers due at one
// instant, all started and armed before it, and measures how late each
// run leaves its wait.
//
// A run's timer is due at the logical time of the step that entered the
// wait (the start's stream timestamp, in ms) plus the state's delay, a
// constant of the document. Runs started one after another therefore
// cannot share one document and one due instant: the scenario deploys a
// family of the same workflow with delays timerGrain apart, and each
// start takes the one that makes it due at the instant or at most
// timerGrain after it. Lateness is measured against each run's own due
// time, computed as the engine does, so the grain only widens the pile
// of timers (the report gives its spread), never the figure.
const (
	// timerGrain spaces the delays of the timer workflows.
	timerGrain = 10 * time.Millisecond
	// timerDocs caps the workflows deployed: their delays cover
	// timerDocs × timerGrain of starting. Runs started later take the
	// shortest delay and are due later than the instant.
	timerDocs = 128
)

// TimersReport is the timers scenario's own figures.
type TimersReport struct {
	Runs int `json:"runs"`
	// LeadMS is how long before the instant the first start was sent.
	LeadMS float64 `json:"lead_ms"`
	// StartSeconds is how long sending every start took.
	StartSeconds float64 `json:"start_seconds"`
	// DueSpreadMS is the latest due time minus the earliest: how close
	// to one instant the timers were.
	DueSpreadMS float64 `json:"due_spread_ms"`
	// ArmedLate counts runs whose wait was announced after their due time
	// (their lateness includes their start); Early those that left the
	// wait before it (none should).
	ArmedLate int `json:"armed_late"`
	Early     int `json:"early"`
	// Fired is the logical time of the step that ended the wait (the
	// fired timer's timestamp in the input stream) minus the due time;
	// Left is when that step's record was stored (its revision's
	// timestamp in the run bucket) minus the due time: the lateness.
	Fired Latency `json:"fired"`
	Left  Latency `json:"left"`
	// DrainedPerSec is the runs over the time from the earliest due time
	// to the last record stored.
	DrainedPerSec float64 `json:"drained_per_sec"`
}

// timerLead is how long before the instant the first start goes out:
// time to start and arm every run first.
func timerLead(n int) time.Duration {
	lead := time.Second + time.Duration(n)*300*time.Microsecond
	return (lead + timerGrain - 1) / timerGrain * timerGrain
}

// timerDelays are the delays of the workflows deployed for n runs: the
// lead, then timerGrain less each, as many as starting n runs at 10,000
// a second takes grains.
func timerDelays(n int) []time.Duration {
	lead := timerLead(n)
	k := 1 + int(time.Duration(n)*100*time.Microsecond/timerGrain)
	k = min(k, timerDocs, int(lead/timerGrain)-1)
	delays := make([]time.Duration, max(k, 1))
	for j := range delays {
		delays[j] = lead - time.Duration(j)*timerGrain
	}
	return delays
}

func timerWorkflow(w workload, delay time.Duration) string {
	return w.workflow + "-" + strconv.FormatInt(delay.Milliseconds(), 10)
}

// timers measures the scenario; see the constants above.
func (r *runner) timers(ctx context.Context, w workload) (ScenarioReport, error) {
	n := r.cfg.TimerRuns
	rep := ScenarioReport{Scenario: w.scenario, Window: parkWindow}
	tr := &TimersReport{Runs: n}
	rep.Timers = tr
	delays := timerDelays(n)
	for _, d := range delays {
		if _, err := r.dep.fleet.Deploy(ctx, timerWorkflow(w, d), []byte(timerDoc(d.Milliseconds()))); err != nil {
			return rep, fmt.Errorf("bench: deploy %s: %w", timerWorkflow(w, d), err)
		}
	}
	prefix := w.code + "-"
	idOf := func(i int) string { return prefix + strconv.Itoa(i) }
	indexOf := func(id string) int {
		i, err := strconv.Atoi(strings.TrimPrefix(id, prefix))
		if err != nil || i < 0 || i >= n || !strings.HasPrefix(id, prefix) {
			return -1
		}
		return i
	}
	var (
		delay    = make([]atomic.Int64, n) // the run's delay, ns
		startMS  = make([]atomic.Int64, n) // its start's logical time + 1, ms (0: unknown)
		armedAt  = make([]atomic.Int64, n) // when its wait was announced, Unix ns
		doneSeen = make([]atomic.Bool, n)
		done     atomic.Int64
		allDone  = make(chan struct{})
	)
	hook := func(id string, a announcement) {
		i := indexOf(id)
		if i < 0 {
			return
		}
		switch a.status {
		case string(run.StatusWaiting):
			if armedAt[i].CompareAndSwap(0, a.at.UnixNano()) {
				if t, ok := statusTime(a.body); ok {
					startMS[i].Store(int64(t) + 1)
				}
			}
		case string(run.StatusDone):
			if !doneSeen[i].Swap(true) && done.Add(1) == int64(n) {
				close(allDone)
			}
		}
	}
	r.drv.hook.Store(&hook)
	defer r.drv.hook.Store(nil)

	lead := delays[0]
	r.progress("%s: %d runs to sleep on timers due in %s (%d workflows %s apart)", w.scenario, n, lead, len(delays), timerGrain)
	a, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}
	began := time.Now()
	instant := began.Add(lead)
	err = fire(ctx, n, parkWindow, func(ctx context.Context, i int) error {
		j := min(int(time.Since(began)/timerGrain), len(delays)-1)
		delay[i].Store(int64(delays[j]))
		return r.drv.cl.StartRun(ctx, timerWorkflow(w, delays[j]), idOf(i), nil)
	})
	if err != nil {
		return rep, err
	}
	tr.LeadMS, tr.StartSeconds = ms(lead), time.Since(began).Seconds()
	r.progress("%s: %d started in %.2f s; the first are due in %s", w.scenario, n, tr.StartSeconds, time.Until(instant).Round(time.Millisecond))
	stopProfile := r.profile(string(w.scenario))
	patience := time.Until(instant) + r.cfg.RunTimeout + time.Duration(n)*time.Millisecond
	select {
	case <-allDone:
	case <-ctx.Done():
		stopProfile()
		return rep, context.Cause(ctx)
	case <-time.After(patience):
		stopProfile()
		return rep, fmt.Errorf("bench: timers: %d of %d runs done %s after the start", done.Load(), n, patience)
	}
	stopProfile()
	b, err := r.sample(ctx)
	if err != nil {
		return rep, err
	}

	// Each run's due time, as the engine computed it, and its record.
	kv, err := r.drv.js.KeyValue(ctx, r.drv.names.RunBucket())
	if err != nil {
		return rep, fmt.Errorf("bench: timers: %w", err)
	}
	inputs, err := r.drv.js.Stream(ctx, r.drv.names.InputStream())
	if err != nil {
		return rep, fmt.Errorf("bench: timers: %w", err)
	}
	due := make([]float64, n) // Unix ms
	left := make([]time.Duration, n)
	fired := make([]time.Duration, n)
	stored := make([]time.Time, n)
	err = fire(ctx, n, 64, func(ctx context.Context, i int) error {
		id := idOf(i)
		start := float64(startMS[i].Load() - 1)
		if start < 0 {
			// The wait's announcement was missed: the start's timestamp.
			m, err := kvstore.LastStart(ctx, inputs, r.drv.names, id)
			if err != nil {
				return fmt.Errorf("run %s: its start: %w", id, err)
			}
			start = float64(m.Time.UnixMilli())
		}
		due[i] = start + ms(time.Duration(delay[i].Load()))
		e, err := kv.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("run %s: its record: %w", id, err)
		}
		var rec struct {
			Status struct {
				Status string  `json:"status"`
				Time   float64 `json:"time"`
			} `json:"status"`
		}
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			return fmt.Errorf("run %s: its record: %w", id, err)
		}
		if rec.Status.Status != string(run.StatusDone) {
			return fmt.Errorf("run %s: its record says %q, want done", id, rec.Status.Status)
		}
		stored[i] = e.Created()
		left[i] = e.Created().Sub(unixMS(due[i]))
		fired[i] = time.Duration((rec.Status.Time - due[i]) * float64(time.Millisecond))
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("bench: timers: %w", err)
	}
	first, last, lastStored := math.Inf(1), math.Inf(-1), time.Time{}
	for i := range n {
		first, last = min(first, due[i]), max(last, due[i])
		if stored[i].After(lastStored) {
			lastStored = stored[i]
		}
		if at := armedAt[i].Load(); at != 0 && time.Unix(0, at).After(unixMS(due[i])) {
			tr.ArmedLate++
		}
		if left[i] < 0 || fired[i] < 0 {
			tr.Early++
		}
	}
	tr.DueSpreadMS = last - first
	tr.Fired, tr.Left = latencyOf(fired), latencyOf(left)
	if drain := lastStored.Sub(unixMS(first)); drain > 0 {
		tr.DrainedPerSec = float64(n) / drain.Seconds()
	}
	rep.Runs, rep.RunsPerSec, rep.Saturated = n, tr.DrainedPerSec, tr.Left
	r.account(&rep, a, b, n, n)
	r.progress("%s: lateness p50 %.0f ms, p99 %.0f ms (fired p50 %.0f, p99 %.0f ms); due within %.0f ms; %d armed late, %d early",
		w.scenario, tr.Left.P50, tr.Left.P99, tr.Fired.P50, tr.Fired.P99, tr.DueSpreadMS, tr.ArmedLate, tr.Early)
	return rep, nil
}

// statusTime reads the logical time of a status announcement.
func statusTime(body []byte) (float64, bool) {
	var s struct {
		Time *float64 `json:"time"`
	}
	if err := json.Unmarshal(body, &s); err != nil || s.Time == nil {
		return 0, false
	}
	return *s.Time, true
}

// unixMS is a Unix time in milliseconds as a time.
func unixMS(t float64) time.Time { return time.Unix(0, int64(t*float64(time.Millisecond))) }
