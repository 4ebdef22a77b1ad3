package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// results are the invariants' findings over every run.
type results struct {
	runs, settled int
	// wrong: settled with another end than a fault-free run's.
	wrong int
	// appliedTwice counts task attempts whose result the runs applied
	// more than once; inputsTwice input messages applied more than once.
	appliedTwice, inputsTwice int
	// executions counts task attempts the workers began; reexecuted how
	// many of those ran again (at-least-once execution after a kill),
	// redelivered1 how many ran again on a first delivery.
	executions, reexecuted, redelivered1 int
	// timer fires applied, and refused as late or repeated.
	timersApplied, timersRefused int
	// tombstonesKept counts runs whose index head is at the deletion the
	// server wrote when their tombstone expired while the stream's leader
	// still holds the tombstone (checkIndex).
	tombstonesKept int
	// startsRepeated counts start messages of a run that already existed:
	// the driver retried a start call after an error, and the client
	// draws a fresh message id per call, so the retry is a second message.
	startsRepeated int
	// events delivered to their run (applied or refused by it).
	events int
	// replayEqual counts runs whose replay rebuilt the saved state.
	replayEqual int
	// redriven counts the runs that failed and went on after a redrive.
	redriven int
	// reset counts the runs reset once done that ended again.
	reset int
	// Retention: removed counts the harness's runs a tombstone replaced
	// (the watcher saw it), removedUnsettled those whose last record seen
	// before it was not settled; archivedChecked the runs checked from
	// their archive, removedUnseen those the driver never saw settle;
	// afterRemoval inputs a removed run never took; watched the
	// records the watcher saw.
	removed, removedUnsettled, archivedChecked, removedUnseen, afterRemoval, watched int
	// misbehaved counts the attempts the protocol worker misbehaved on,
	// and misDeliveries the deliveries, by kind (misKinds).
	misbehaved, misDeliveries map[string]int
	// timedOut counts attempts that ended at their deadline
	// (TASK_TIMEOUT); timedOutMis those of them misbehaved on, the rest
	// timed out after a fault.
	timedOut, timedOutMis int
	// stranded are the runs found without a way forward: in a state the
	// replay stepped through, in a record sampled mid-run, or at the end.
	stranded map[string]bool
	// statesStepped, sampled and endChecked count the states checked
	// each way (endChecked: unsettled records at the end, the canaries
	// among them).
	statesStepped, sampled, endChecked int
	// controlFound: the end check found canaryCut stranded, as it must.
	controlFound bool
	// naksLeft counts the invocations left in the task stream after the
	// drain: attempts NAKed until max_deliver ran out.
	naksLeft int
	// scheduledRuns counts the runs the chaos schedules started,
	// scheduleStarts their start messages (a fire that came twice, or
	// a start published again, is a second one, which the input stream or
	// the dispatchers drop); scheduleSpan says what each schedule fired.
	scheduledRuns, scheduleStarts int
	scheduleSpan                  []string
	// problems are the violations, one line each.
	problems []string
}

func (r *results) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// fail reports every violation.
func (r *results) fail(t *testing.T) {
	t.Helper()
	const show = 40
	for i, p := range r.problems {
		if i == show {
			t.Errorf("... and %d more problems", len(r.problems)-show)
			break
		}
		t.Error(p)
	}
}

// check waits until nothing is left unacknowledged, then checks every
// run against the invariants, and every unsettled record for a way
// forward. smp is the mid-run sampler, stopped.
func (h *harness) check(ctx context.Context, d *driver, runsCtx context.Context, smp *sampler) *results {
	res := &results{stranded: map[string]bool{}}
	// Inputs a killed dispatcher held come back after the consumer's
	// AckWait (30s by default), so allow at least that much more.
	wait := time.Minute
	if dl, ok := runsCtx.Deadline(); ok && time.Until(dl) > wait {
		wait = time.Until(dl)
	}
	logs, _ := readWorkerLogs(h.dir)
	if err := waitFor(ctx, wait, func(ctx context.Context) error {
		err := h.drained(ctx, logs.naked())
		if err != nil {
			logs, _ = readWorkerLogs(h.dir) // a NAK logged since
		}
		return err
	}); err != nil {
		res.problem("messages left unacknowledged %s after every run settled: %v", wait, err)
	} else if left, err := h.leftInvocations(ctx); err == nil {
		res.naksLeft = len(left)
	}
	for _, err := range h.errs {
		res.problem("harness: %v", err)
	}

	logs, err := readWorkerLogs(h.dir)
	if err != nil {
		res.problem("read the execution logs: %v", err)
	}
	res.executions = logs.executions
	res.misbehaved, res.misDeliveries = logs.attempts(), logs.deliveries
	for _, es := range logs.runs {
		res.reexecuted += len(es) - 1
		first := 0
		for _, e := range es {
			if e.Delivery <= 1 {
				first++
			}
		}
		res.redelivered1 += max(first-1, 0)
	}

	histories, err := h.readInputs(ctx)
	if err != nil {
		res.problem("%v", err)
	}
	rp, err := h.replayer(ctx)
	if err != nil {
		res.problem("%v (the runs' states are not stepped through)", err)
	}
	runs := d.all()
	res.runs = len(runs)
	checks := make([]*runCheck, len(runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, r := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			checks[i] = h.checkRun(ctx, rp, r, histories[r.id], logs)
		})
	}
	wg.Wait()
	for _, c := range checks {
		if c.settled {
			res.settled++
		}
		if c.wrong {
			res.wrong++
		}
		res.appliedTwice += c.appliedTwice
		res.inputsTwice += c.inputsTwice
		res.timersApplied += c.timersApplied
		res.timersRefused += c.timersRefused
		res.startsRepeated += c.startsRepeated
		res.events += c.events
		if c.replayEqual {
			res.replayEqual++
		}
		res.timedOut += c.timedOut
		res.timedOutMis += c.timedOutMis
		res.statesStepped += c.states
		if c.redriven {
			res.redriven++
		}
		if c.archived {
			res.archivedChecked++
		}
		res.afterRemoval += c.afterRemoval
		if c.resets > 0 {
			res.reset++
		}
		if c.stranded {
			res.stranded[c.id] = true
		}
		res.problems = append(res.problems, c.problems...)
	}
	h.checkRemovals(res, runs)
	h.checkSchedules(res, runs, histories)
	sampled, strandedMid := smp.result()
	res.sampled = sampled
	for id, why := range strandedMid {
		res.stranded[id] = true
		res.problem("run %s: %s", id, why)
	}
	h.checkIndex(ctx, res, runs)
	h.checkEnd(ctx, res)
	for _, group := range [][]*proc{h.nodeProcs(), h.dispatchers, h.workers} {
		for _, p := range group {
			for _, crash := range p.unasked() {
				res.problem("%s", crash)
			}
		}
	}
	for _, race := range h.races() {
		res.problem("data race reported in %s", race)
	}
	return res
}

// runCheck is what checkRun found about one run.
type runCheck struct {
	id                           string
	settled, wrong, replayEqual  bool
	appliedTwice, inputsTwice    int
	timersApplied, timersRefused int
	startsRepeated               int
	events                       int
	// timedOut counts the run's attempts that timed out, timedOutMis
	// those misbehaved on; states the states stepped through; stranded
	// says one of them had no way forward.
	timedOut, timedOutMis, states int
	stranded                      bool
	// redriven says the run failed and a redrive took it on.
	redriven bool
	// archived: the run was removed and checked from its archive;
	// afterRemoval counts its inputs stored after the archive (refused as
	// a removed run's); resets the resets its state counts.
	archived             bool
	afterRemoval, resets int
	problems             []string
}

func (c *runCheck) problem(runID, format string, args ...any) {
	c.problems = append(c.problems, "run "+runID+": "+fmt.Sprintf(format, args...))
}

// checkRun checks one run: its end, its record against its history (each
// input handled once, each task result and timer fire applied once, each
// event delivered), what its attempts' deadlines did, its visits and its
// replay.
func (h *harness) checkRun(ctx context.Context, rp *replay.Stepper, r *runLog, history []input, logs *workerLogs) *runCheck {
	c := &runCheck{id: r.id}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if r.status == nil && !r.removedUnseen {
		c.problem(r.id, "lost: %v; %s; %s", r.failure, h.unreached(ctx, r.id, history), h.diagnose(ctx, r.id))
		return c
	}
	stored := history // the run's inputs the stream still holds
	rec, history, ar, err := h.final(ctx, r, history, c)
	if err != nil {
		c.problem(r.id, "%v", err)
		return c
	}
	if r.redriveLost {
		if err := redriveAfterRemoval(slices.Concat(stored, history), ar); err != nil {
			c.problem(r.id, "%v", err)
		}
	}
	if r.status == nil {
		// Removed before the driver saw it settle: its end is the
		// archived record's.
		if r.status, err = step.StatusOf(r.id, rec.Record, nil); err != nil {
			c.problem(r.id, "archived status: %v", err)
			return c
		}
	}
	c.settled = true
	want := canonical(r.wf.result(r.i))
	// A redrive that lost to the removal leaves the run failed, as it was
	// (its 0 redrives are checked below).
	lostRedrive := r.redriveLost && r.status.Status == wire.StatusFailed
	if !lostRedrive && (r.status.Status != wire.StatusDone || r.status.State != r.wf.state || canonical(string(r.status.Result)) != want) {
		c.wrong = true
		c.problem(r.id, "ended %s in %s with %s (error %+v); a fault-free run ends done in %s with %s",
			r.status.Status, r.status.State, r.status.Result, r.status.Error, r.wf.state, want)
	}
	r.ended = rec.stored
	// A refusal saved after the run settled (a late timer fire whose purge
	// failed) rewrites the record; the driver then saw the settle earlier.
	if !r.settled.IsZero() && r.settled.Before(r.ended) {
		r.ended = r.settled
	}
	if len(history) == 0 {
		c.problem(r.id, "no input of the run in the input stream")
	}
	applied := map[uint64]int{}
	for _, seq := range rec.Applied {
		applied[seq]++
	}
	if window := (dispatcher.Config{}).WithDefaults().AppliedHistory; len(history) >= window {
		c.problem(r.id, "%d inputs, more than the record's applied window; the check cannot see them all", len(history))
	}
	rejected := map[uint64]string{}
	for _, rj := range rec.Rejected {
		rejected[rj.Seq] = rj.Reason
	}
	if window := (dispatcher.Config{}).WithDefaults().RejectedHistory; len(rec.Rejected) >= window {
		c.problem(r.id, "%d inputs refused, as many as the record's rejected window; the check cannot see them all", len(rec.Rejected))
	}
	starts := 0
	resultApplied := map[attemptKey]int{}
	acceptedEvents := 0
	for _, m := range history {
		kind := m.kind
		reason, refused := rejected[m.seq]
		switch n := applied[m.seq]; {
		case n == 0 && !refused && c.archived:
			// Not taken before the removal (stored after the settlement and
			// read into the archive before a dispatcher refused it, or held
			// by a dispatcher that died until the run was removed): refused
			// as a removed run's input. It cannot have changed the settled
			// run, whose end and replay are checked.
			c.afterRemoval++
			continue
		case n == 0 && !refused:
			c.problem(r.id, "%s input %d never reached the run (not in its record)", kind, m.seq)
			continue
		case n > 1:
			c.inputsTwice++
			c.problem(r.id, "%s input %d applied %d times", kind, m.seq, n)
		case n > 0 && refused:
			c.problem(r.id, "%s input %d both applied and refused", kind, m.seq)
		}
		took := !refused
		switch kind {
		case subjects.KindResult:
			var res wire.Result
			if err := json.Unmarshal(m.data, &res); err != nil {
				c.problem(r.id, "result %d: %v", m.seq, err)
				continue
			}
			k := attemptKey{r.id, res.Activation, res.Node, res.Attempt}
			mis := logs.mis[k]
			switch {
			case malformedResult(mis) && took:
				c.problem(r.id, "result %d of %+v, malformed on purpose (%s), was applied", m.seq, k, mis)
			case malformedResult(mis): // refused, as it must be
			case len(logs.runs[k]) == 0:
				c.problem(r.id, "result %d of %+v, which no worker logged running", m.seq, k)
			}
			if took {
				if resultApplied[k]++; resultApplied[k] == 2 {
					c.appliedTwice++
					c.problem(r.id, "result of %+v applied twice", k)
				}
			}
		case subjects.KindTimer:
			if took {
				c.timersApplied++
			} else {
				c.timersRefused++
			}
		case subjects.KindEvent:
			c.events++
			var ev struct{ OK bool }
			if json.Unmarshal(m.data, &ev) == nil && ev.OK && took {
				acceptedEvents++
				r.eventStored = m.time
			}
		case subjects.KindStart:
			var body wire.Start
			carries := json.Unmarshal(m.data, &body) == nil && body.Event != nil
			if carries {
				c.events++
			}
			switch {
			case took && carries && starts > 0:
				// A retried start with its event: the event alone went
				// to the run, which ignores it.
				c.startsRepeated++
			case took:
				starts++
				r.stored = m.time
			case strings.Contains(reason, "already exists"):
				c.startsRepeated++
			default:
				c.problem(r.id, "start %d refused: %s", m.seq, reason)
			}
		}
	}
	if starts != 1 {
		c.problem(r.id, "%d starts applied, want 1", starts)
	}
	h.checkSteps(ctx, c, rp, r, history, rec.Record, logs)
	if r.wf.events && acceptedEvents != 1 {
		c.problem(r.id, "the accepted event applied %d times, want once", acceptedEvents)
	}
	if r.wf.redrive {
		st, err := step.DecodeState(rec.Record)
		switch {
		case err != nil:
			c.problem(r.id, "state: %v", err)
		case int(st.Redrives) != r.redrives:
			c.problem(r.id, "%d redrives applied, the driver saw %d taken", st.Redrives, r.redrives)
		default:
			c.redriven = st.Redrives > 0
		}
	}
	if r.wf.visits != nil {
		st, err := step.DecodeState(rec.Record)
		if err != nil {
			c.problem(r.id, "state: %v", err)
		} else {
			for state, want := range r.wf.visits(r.i) {
				if got, _ := st.Context.Visits[state].(float64); got != want {
					c.problem(r.id, "entered %s %v times, want %v (visits %v)", state, st.Context.Visits[state], want, st.Context.Visits)
				}
			}
		}
	}
	if r.resets > 0 {
		st, err := step.DecodeState(rec.Record)
		switch {
		case err != nil:
			c.problem(r.id, "state: %v", err)
		case st.Resets == 0:
			c.problem(r.id, "no reset applied, the driver saw %d taken", r.resets)
		default:
			c.resets = int(st.Resets)
		}
	}
	src := replay.Source{JS: h.f.JS, Names: h.names, Registry: h.f.Registry, Runs: h.f.Runs, Archived: ar}
	rep, err := replay.Check(ctx, src, r.id)
	if src.Archived == nil && err != nil && h.removed(ctx, r.id) {
		// Removed since its record was read (its history purged while the
		// replay read it): replay its archive.
		if src.Archived, err = h.archived(ctx, r.id); err == nil {
			c.archived = true
			rep, err = replay.Check(ctx, src, r.id)
		}
	}
	switch {
	case err != nil:
		c.problem(r.id, "replay: %v", err)
		h.logf("replay of %s: %v", r.id, err)
	case !rep.Equal:
		c.problem(r.id, "replay diverges at %q: saved %s, rebuilt %s", rep.Divergence, rep.SavedValue, rep.RebuiltValue)
	default:
		c.replayEqual = true
	}
	return c
}

// unreached lists the inputs of a run's history that its record neither
// applied nor refused: what a lost run may be waiting for.
func (h *harness) unreached(ctx context.Context, runID string, history []input) string {
	_, rec, err := h.liveState(ctx, runID)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, m := range history {
		if !slices.Contains(rec.Applied, m.seq) && !slices.ContainsFunc(rec.Rejected, func(r runrecord.Rejection) bool { return r.Seq == m.seq }) {
			out = append(out, fmt.Sprintf("%s %d (stored %s)", m.kind, m.seq, m.time.Format(time.StampMilli)))
		}
	}
	if len(out) == 0 {
		return "every input of its history reached it"
	}
	return "inputs that never reached it: " + strings.Join(out, ", ")
}

// settled is a run's settled record and when the bucket stored it.
type settled struct {
	*runrecord.Record
	stored time.Time
}

// record reads a run's settled record. A replica may answer the read
// (KV gets are direct), so a stale one is read again a few times.
func (h *harness) record(ctx context.Context, runID string) (settled, error) {
	kv, err := h.f.JS.KeyValue(ctx, h.names.RunBucket())
	if err != nil {
		return settled{}, fmt.Errorf("record: %w", err)
	}
	for try := 0; ; try++ {
		e, err := kv.Get(ctx, runID)
		if err != nil {
			return settled{}, fmt.Errorf("record: %w", err)
		}
		rec, err := runrecord.Decode(e.Value())
		if err != nil {
			return settled{}, fmt.Errorf("record: %w", err)
		}
		if rec.Status != nil && run.Status(rec.Status.Status).Terminal() {
			return settled{rec, e.Created()}, nil
		}
		if try == 5 {
			return settled{}, fmt.Errorf("record not settled: %+v", rec.Status)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return settled{}, err
		}
	}
}

// races lists the logs in which a process reported a data race, with the
// report's first lines.
func (h *harness) races() []string {
	paths, _ := filepath.Glob(filepath.Join(h.dir, "*.log"))
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var report []string
		for sc.Scan() {
			if strings.Contains(sc.Text(), "WARNING: DATA RACE") || len(report) > 0 && len(report) < 30 {
				report = append(report, sc.Text())
			}
		}
		_ = f.Close() // read only
		if len(report) > 0 {
			out = append(out, filepath.Base(p)+":\n"+strings.Join(report, "\n"))
		}
	}
	return out
}

// canonical is the canonical form of a JSON text, or the text itself if
// it is not JSON.
func canonical(text string) string {
	v, err := value.Decode([]byte(text), value.DefaultLimits)
	if err != nil {
		return text
	}
	return value.MustCanonical(v)
}

// diagnose describes a run's record as each node's replica and the
// stream leader hold it.
func (h *harness) diagnose(ctx context.Context, runID string) string {
	var out []string
	describe := func(data []byte, rev uint64, err error) string {
		if err != nil {
			return err.Error()
		}
		rec, err := runrecord.Decode(data)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("revision %d status %+v applied %v", rev, rec.Status, rec.Applied)
	}
	data, rev, err := h.f.Runs.Get(ctx, runID, kvstore.FromLeader())
	out = append(out, "leader: "+describe(data, rev, err))
	for _, n := range h.nodes {
		nc, err := nats.Connect(n.url())
		if err != nil {
			out = append(out, n.name+": "+err.Error())
			continue
		}
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(ctx, h.names.RunBucket())
		if err == nil {
			var e jetstream.KeyValueEntry
			if e, err = kv.Get(ctx, runID); err == nil {
				out = append(out, n.name+" (direct): "+describe(e.Value(), e.Revision(), nil))
			}
		}
		if err != nil {
			out = append(out, n.name+" (direct): "+err.Error())
		}
		nc.Close()
	}
	return strings.Join(out, "; ")
}

// redriveAfterRemoval checks a redrive the driver counted as lost to the
// run's removal: the run was removed, and every redrive among inputs (the
// stream's and the archive's) was stored after the tombstone. One stored before it should have
// deferred the removal (ARCHITECTURE.md, retention step 3).
func redriveAfterRemoval(inputs []input, ar *wire.Archived) error {
	if ar == nil {
		return errors.New("a redrive counted as lost to the run's removal, but the run was not removed")
	}
	removed := time.UnixMilli(int64(ar.Removed.At))
	for _, m := range inputs {
		if m.kind == subjects.KindRedrive && m.time.Before(removed) {
			return fmt.Errorf("redrive %d stored at %s, before the run's removal at %s, was lost to it", m.seq, m.time.UTC().Format(time.RFC3339Nano), removed.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

func TestRedriveAfterRemoval(t *testing.T) {
	t.Parallel()
	removedAt := time.Date(2026, 12, 5, 4, 12, 13, 304_000_000, time.UTC)
	ar := &wire.Archived{Removed: wire.Removed{At: float64(removedAt.UnixMilli())}}
	at := func(kind string, d time.Duration) input { return input{seq: 7, kind: kind, time: removedAt.Add(d)} }
	for _, c := range []struct {
		name   string
		inputs []input
		ar     *wire.Archived
		ok     bool
	}{
		{"stored after the removal", []input{at(subjects.KindStart, -time.Minute), at(subjects.KindRedrive, 600*time.Millisecond)}, ar, true},
		{"stored before the removal", []input{at(subjects.KindRedrive, -time.Second)}, ar, false},
		{"another kind before it", []input{at(subjects.KindEvent, -time.Second)}, ar, true},
		{"the run not removed", []input{at(subjects.KindRedrive, time.Second)}, nil, false},
	} {
		if err := redriveAfterRemoval(c.inputs, c.ar); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
