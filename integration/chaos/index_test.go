package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/wire"
)

// indexCatchUp bounds how long the run index may take to catch up once
// every process runs again: a killed indexer's changes come back after
// the indexers' AckWait (30 s), and the indexer moves with partition 0
// three heartbeats after its dispatcher is killed.
const indexCatchUp = 2 * time.Minute

// checkIndex checks that the run index caught up with every record after
// the chaos: the indexers' consumer has nothing pending or unacknowledged,
// and every run that still has a record has a head naming its revision.
// One dispatcher at a time runs the indexer (the owner of partition 0),
// and the chaos kills it like the others, so this is what shows that the
// indexer moves and that what a killed one held is indexed again.
func (h *harness) checkIndex(ctx context.Context, res *results, runs []*runLog) {
	n := h.names
	err := waitFor(ctx, indexCatchUp, func(ctx context.Context) error {
		ci, err := h.consumerInfo(ctx, [2]string{n.KVStream(n.RunBucket()), n.IndexerConsumer()})
		if err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("the indexers' consumer has %d changes pending and %d delivered, not acknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	if err != nil {
		res.problem("run index: not caught up %s after every process ran again: %v", indexCatchUp, err)
		return
	}
	behind := 0
	for _, r := range runs {
		_, rev, err := h.f.Runs.Get(ctx, r.id, kvstore.FromLeader())
		if errors.Is(err, kvstore.ErrRunNotFound) {
			continue // removed by retention and gone
		}
		if err != nil {
			res.problem("run index: read run %s: %v", r.id, err)
			continue
		}
		m, err := kvstore.LastOnSubject(ctx, h.f.JS, n.IndexStream(), n.IndexHead(r.id))
		var head wire.IndexHead
		if err == nil {
			err = json.Unmarshal(m.Data, &head)
		}
		switch {
		case err != nil:
			res.problem("run index: run %s (record revision %d): no head: %v", r.id, rev, err)
			behind++
		case head.RecordRev != rev:
			res.problem("run index: run %s: head at record revision %d, the record at %d", r.id, head.RecordRev, rev)
			behind++
		}
	}
	h.logf("run index: caught up; %d of %d runs' heads behind their records", behind, len(runs))
}
