package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
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
		data, rev, err := h.f.Runs.Get(ctx, r.id, kvstore.FromLeader())
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
		case head.RecordRev != rev && pastItsTTL(head, rev, data):
			// The index took the deletion the server wrote when the
			// tombstone expired; the replica leading now kept the
			// tombstone (finding 25 in docs/RELIABILITY.md).
			res.tombstonesKept++
			h.logf("run index: run %s: head at the deletion (revision %d) of a tombstone the leader still holds (revision %d), past its TTL", r.id, head.RecordRev, rev)
		case head.RecordRev != rev:
			res.problem("run index: run %s: head at record revision %d, the record at %d", r.id, head.RecordRev, rev)
			behind++
		}
	}
	h.logf("run index: caught up; %d of %d runs' heads behind their records", behind, len(runs))
}

// pastItsTTL reports whether a head and a record disagree only because
// the stream's leader kept a tombstone past its TTL: the record (at rev)
// is a tombstone whose time ran out a while ago, and the head names a
// later deletion of the run's key (a head without a status), which only
// the server writes, when a tombstone expires.
func pastItsTTL(head wire.IndexHead, rev uint64, record []byte) bool {
	var re *runrecord.RemovedError
	if _, err := runrecord.Decode(record); !errors.As(err, &re) {
		return false
	}
	expired := time.UnixMilli(int64(re.Removed.Until)).Add(tombstoneSlack)
	return head.Status == "" && head.RecordRev > rev && time.Now().After(expired)
}

// tombstoneSlack is how long after its TTL a tombstone may still be in
// the stream without being taken for one a replica kept: the server
// expires messages in passes.
const tombstoneSlack = 30 * time.Second

func TestPastItsTTL(t *testing.T) {
	t.Parallel()
	tomb := func(until time.Time) []byte {
		b, err := runrecord.EncodeRemoved(wire.Removed{Run: "r", Status: "done", Until: float64(until.UnixMilli())})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	long := time.Now().Add(-time.Hour)
	deleted := wire.IndexHead{RecordRev: 9, Shape: 2}
	for _, c := range []struct {
		name   string
		head   wire.IndexHead
		rev    uint64
		record []byte
		want   bool
	}{
		{"a deletion after a tombstone long expired", deleted, 5, tomb(long), true},
		{"a deletion after a tombstone still in its time", deleted, 5, tomb(time.Now().Add(time.Minute)), false},
		{"a deletion after a tombstone just expired", deleted, 5, tomb(time.Now()), false},
		{"a head before the tombstone", wire.IndexHead{RecordRev: 4, Shape: 2}, 5, tomb(long), false},
		{"a head with a status", wire.IndexHead{RecordRev: 9, Status: "removed", Shape: 2}, 5, tomb(long), false},
		{"a record, not a tombstone", deleted, 5, []byte(`{"state":{}}`), false},
	} {
		if got := pastItsTTL(c.head, c.rev, c.record); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
