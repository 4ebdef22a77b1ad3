package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// A child run (docs/CHILDREN.md) is not removed by retention while its
// parent has not settled: the parent's tree, status and console keep
// showing it. Its removal, when due, reads the parent's record; a parent
// that exists and has not settled moves the removal on by childRecheck,
// when it is judged again. A parent that settled, or is gone, lets it go.

// maxChildRecheck bounds how long a child's removal waits before it
// looks at its parent again.
const maxChildRecheck = time.Hour

// childRecheck is how long a child's removal waits for its unsettled
// parent before it is judged again: its retention, at most
// maxChildRecheck.
func childRecheck(retention time.Duration) time.Duration {
	return min(max(retention, time.Second), maxChildRecheck)
}

// parentOf is the id of rec's parent run, "" for a run that is no child.
func parentOf(rec *runrecord.Record) string {
	if rec == nil || rec.Parent == nil {
		return ""
	}
	return rec.Parent.Run
}

// parentUnsettled says why a child of parent must be kept ("" when it
// may go): its parent exists and has not settled.
func (d *Dispatcher) parentUnsettled(ctx context.Context, parent string) (string, error) {
	gctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	data, _, err := d.store.Get(gctx, parent)
	cancel()
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the parent run %s of a child due for removal: %w", parent, err)
	}
	rec, err := runrecord.Decode(data)
	if errors.Is(err, runrecord.ErrRemoved) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the parent run %s of a child due for removal: %w", parent, err)
	}
	ws, err := step.StatusOf(parent, rec, nil)
	if err != nil {
		return "", fmt.Errorf("read the parent run %s of a child due for removal: %w", parent, err)
	}
	if run.Status(ws.Status).Terminal() {
		return "", nil
	}
	return "its parent run " + parent + " is " + ws.Status + " (a child is kept until its parent settles)", nil
}

// deferChild moves the batched removal of a child run on by
// childRecheck when its parent has not settled; it reports whether it
// did.
func (d *Dispatcher) deferChild(ctx context.Context, due wire.Due, log *slog.Logger) (bool, error) {
	if due.Parent == "" {
		return false, nil
	}
	why, err := d.parentUnsettled(ctx, due.Parent)
	if err != nil || why == "" {
		return false, err
	}
	until := d.cfg.Clock.Now().Add(childRecheck(time.Duration(due.Retention) * time.Millisecond))
	out, bucket, err := d.dueEntry(due.Run, due, until)
	if err != nil {
		return false, err
	}
	// Its own id: the entry it replaces has the settlement's, or an
	// earlier bucket's.
	out[0].ID += "/parent/" + strconv.FormatInt(bucket, 10)
	pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	err = d.pub.publish(pctx, out)
	cancel()
	if err != nil {
		return false, fmt.Errorf("defer the removal of child run %s: %w", due.Run, err)
	}
	d.markScheduled(bucket)
	log.Info("dispatcher: removal deferred: "+why, slog.String("run_id", due.Run), slog.Time("until", until))
	return true, nil
}
