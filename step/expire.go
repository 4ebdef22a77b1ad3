package step

import (
	"fmt"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/wire"
)

// Remove is the outcome of a removal input that stands: the run is
// settled, by the settlement its removal was scheduled for. The state is
// left as it was; Result.Removed is the tombstone to write in its place.
const Remove Outcome = "remove"

// MinTombstone is the shortest life of a tombstone, whatever the
// retention: inputs that were in flight when the run was removed still
// meet it and are refused with its reason.
const MinTombstone = time.Minute

// expire judges a removal input (kind expire): retention removes only a
// settled run, and only for the settlement it was scheduled for, so a
// run revived since (a redrive) or settled again is kept. A refusal is
// noted on the record like any rejection, so that replay reproduces it.
func expire(s Settings, cur Run, in *Input, seq uint64, now float64) Result {
	prev, st := cur.Record, cur.State
	if st.Control.Time > now {
		now = st.Control.Time
	}
	var why error
	switch {
	case in.refused != nil:
		why = in.refused
	case !st.Status.Terminal():
		why = fmt.Errorf("run %s is %s: retention removes only settled runs", in.RunID, st.Status)
	case prev.Status == nil || prev.Status.Time != in.Expire.Settled:
		why = fmt.Errorf("removal of run %s was scheduled for its settlement at %s, but the run has settled again since", in.RunID, msTime(in.Expire.Settled))
	}
	if why != nil {
		why = fmt.Errorf("%w: %w", run.ErrRejected, why)
		rej := runrecord.Rejection{Seq: seq, Kind: in.Kind, Reason: why.Error(), Time: now}
		return Result{Run: Run{Record: prev.Refused(rej, s.RejectedHistory), State: st}, Outcome: Rejected, Reason: why}
	}
	life := max(time.Duration(in.Expire.Retention)*time.Millisecond, MinTombstone)
	return Result{Run: cur, Outcome: Remove, Removed: &wire.Removed{
		Run: in.RunID, At: now,
		Workflow: st.Workflow, Revision: st.Revision, Status: prev.Status.Status, Settled: prev.Status.Time,
		Until: now + float64(life.Milliseconds()),
	}}
}

func msTime(ms float64) string {
	return time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano)
}

// Removable judges a due entry of batched removal against the run's
// current record: retention removes only a settled run, and only for the
// settlement the entry was published for. Nothing is noted on the record:
// a due entry is no input, and replay never sees it.
func Removable(runID string, rec *runrecord.Record, settled float64) error {
	ws, err := StatusOf(runID, rec, nil)
	if err != nil {
		return err
	}
	switch {
	case !run.Status(ws.Status).Terminal():
		return fmt.Errorf("run %s is %s: retention removes only settled runs", runID, ws.Status)
	case ws.Time != settled:
		return fmt.Errorf("removal of run %s was due for its settlement at %s, but the run has settled again since", runID, msTime(settled))
	}
	return nil
}
