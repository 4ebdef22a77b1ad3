package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// Retention under chaos. The workflows marked retain are deployed with a
// retention of a few seconds and the archive on (retainedPolicy), so that
// their runs are removed while the faults go on: a removal bucket is due
// about 20 s after a run settles. The watcher follows every record of the
// run bucket and says whether a tombstone ever replaced a record that was
// not settled; the check reads a removed run's final record and history
// from the archive and checks them as it checks a live run's.

// retention is the retained workflows' "$run" retention.
const retention = "5s"

// retainedPolicy is harnessPolicy with a short retention and the archive.
var retainedPolicy = func() *policy.Policy {
	var tree map[string]json.RawMessage
	if err := json.Unmarshal([]byte(harnessPolicy), &tree); err != nil {
		panic("chaos: harnessPolicy: " + err.Error())
	}
	tree[policy.RunKey] = json.RawMessage(`{"retention":"` + retention + `","archive":true}`)
	doc, err := json.Marshal(tree)
	if err != nil {
		panic("chaos: retainedPolicy: " + err.Error())
	}
	p, err := policy.Parse(doc)
	if err != nil {
		panic("chaos: retainedPolicy: " + err.Error())
	}
	return p
}()

// retained names the workflows retention removes.
func retained() []string {
	var out []string
	for _, wf := range workflows {
		if wf.retain {
			out = append(out, wf.name)
		}
	}
	return out
}

// policyOf is the policy a workflow is deployed with.
func policyOf(wf *workflow) *policy.Policy {
	if wf.retain {
		return retainedPolicy
	}
	return parsedPolicy
}

// watcher follows the run bucket from before the first run: the last
// status each run's record had, and each tombstone.
type watcher struct {
	mu sync.Mutex
	// last is each run's status in the last record seen.
	last map[string]string
	// removed are the runs whose record a tombstone replaced.
	removed map[string]wire.Removed
	// unsettled are the runs removed while the last record seen of them
	// was not settled, with that status.
	unsettled map[string]string
	// updates counts the records seen.
	updates int
}

// startWatcher watches every key of the run bucket for new updates; it
// stops when ctx ends.
func (h *harness) startWatcher(ctx context.Context) (*watcher, error) {
	kv, err := h.f.JS.KeyValue(ctx, h.names.RunBucket())
	if err != nil {
		return nil, fmt.Errorf("watch the run bucket: %w", err)
	}
	kw, err := kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("watch the run bucket: %w", err)
	}
	w := &watcher{last: map[string]string{}, removed: map[string]wire.Removed{}, unsettled: map[string]string{}}
	go func() {
		defer func() { _ = kw.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-kw.Updates():
				if !ok {
					return
				}
				if e != nil && e.Operation() == jetstream.KeyValuePut {
					w.see(e.Key(), e.Value())
				}
			}
		}
	}()
	return w, nil
}

// see takes one record of run runID.
func (w *watcher) see(runID string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updates++
	rec, err := runrecord.Decode(data)
	var re *runrecord.RemovedError
	if errors.As(err, &re) {
		if _, again := w.removed[runID]; again {
			return
		}
		w.removed[runID] = re.Removed
		if last := w.last[runID]; !run.Status(last).Terminal() {
			w.unsettled[runID] = last
		}
		return
	}
	if err != nil {
		w.last[runID] = "undecodable: " + err.Error()
		return
	}
	st, err := step.StatusOf(runID, rec, nil)
	if err != nil {
		w.last[runID] = "no status: " + err.Error()
		return
	}
	w.last[runID] = st.Status
}

// result is the removals seen and those of runs not seen settled.
func (w *watcher) result() (updates int, removed map[string]wire.Removed, unsettled map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	removed = make(map[string]wire.Removed, len(w.removed))
	for id, r := range w.removed {
		removed[id] = r
	}
	unsettled = make(map[string]string, len(w.unsettled))
	for id, s := range w.unsettled {
		unsettled[id] = s
	}
	return w.updates, removed, unsettled
}

// archived reads a removed run's archive, a few times while a replica
// lags (the archive is written before the tombstone).
func (h *harness) archived(ctx context.Context, runID string) (*wire.Archived, error) {
	store, err := kvstore.OpenArchive(ctx, h.f.JS, h.names)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		ar, err := store.Get(ctx, runID)
		if err == nil || try == 5 {
			return ar, err
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// archivedView is a removed run as its archive holds it: its settled
// record, when it settled, and its history.
func (h *harness) archivedView(ar *wire.Archived) (settled, []input, error) {
	rec, err := runrecord.Decode(ar.Record)
	if err != nil {
		return settled{}, nil, fmt.Errorf("archived record: %w", err)
	}
	if rec.Status == nil || !run.Status(rec.Status.Status).Terminal() {
		return settled{}, nil, fmt.Errorf("archived record not settled: %+v", rec.Status)
	}
	history := make([]input, 0, len(ar.History))
	for _, m := range ar.History {
		_, kind, _, err := h.names.ParseInput(m.Subject)
		if err != nil {
			return settled{}, nil, fmt.Errorf("archived input %d on %s: %w", m.Seq, m.Subject, err)
		}
		history = append(history, input{seq: m.Seq, time: m.Time, subject: m.Subject, kind: kind, header: nats.Header(m.Header), data: m.Data})
	}
	return settled{rec, time.UnixMilli(int64(rec.Status.Time))}, history, nil
}

// final is a settled run's record and history: the live ones, or, once
// retention removed the run, its archive's. A removed run's tombstone
// must name the archived settlement.
func (h *harness) final(ctx context.Context, r *runLog, history []input, c *runCheck) (settled, []input, *wire.Archived, error) {
	rec, err := h.record(ctx, r.id)
	// A tombstone, or none once it expired (a minute after the removal).
	if !errors.Is(err, runrecord.ErrRemoved) && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, history, nil, err
	}
	if !r.wf.retain {
		return settled{}, nil, nil, fmt.Errorf("removed, although workflow %s keeps its runs: %w", r.wf.name, err)
	}
	ar, err := h.archived(ctx, r.id)
	if err != nil {
		return settled{}, nil, nil, fmt.Errorf("removed, and its archive unread: %w", err)
	}
	rec, archived, err := h.archivedView(ar)
	if err != nil {
		return settled{}, nil, nil, err
	}
	if ar.Removed.Status != rec.Status.Status || ar.Removed.Settled != rec.Status.Time {
		c.problem(r.id, "its tombstone says it settled %s at %v, its archived record %s at %v",
			ar.Removed.Status, ar.Removed.Settled, rec.Status.Status, rec.Status.Time)
	}
	c.archived = true
	var last uint64
	if n := len(archived); n > 0 {
		last = archived[n-1].seq
	}
	for _, m := range history {
		if m.seq > last {
			c.afterRemoval++ // refused as a removed run's, recorded nowhere
		}
	}
	return rec, archived, ar, nil
}

// removed says whether the run's record is a tombstone, or gone after
// one.
func (h *harness) removed(ctx context.Context, runID string) bool {
	_, err := h.record(ctx, runID)
	return errors.Is(err, runrecord.ErrRemoved) || errors.Is(err, jetstream.ErrKeyNotFound)
}

// checkRemovals counts what the watcher saw: every removal must be of a
// retained workflow's run, and no run may be removed unless the last
// record seen before its tombstone was settled.
func (h *harness) checkRemovals(res *results, runs []*runLog) {
	if h.watch == nil {
		res.problem("the run bucket was not watched: removals unchecked")
		return
	}
	updates, removed, unsettled := h.watch.result()
	res.watched = updates
	byID := make(map[string]*runLog, len(runs))
	for _, r := range runs {
		byID[r.id] = r
		if r.removedUnseen {
			res.removedUnseen++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(removed)) {
		r, ok := byID[id]
		switch {
		case !ok:
			res.problem("run %s, not one of the driver's, removed: %+v", id, removed[id])
		case !r.wf.retain:
			res.problem("run %s of workflow %s, which keeps its runs, removed: %+v", id, r.wf.name, removed[id])
		default:
			res.removed++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(unsettled)) {
		res.removedUnsettled++
		res.problem("run %s removed while not settled: the last record the harness saw before its tombstone had status %q", id, unsettled[id])
	}
}
