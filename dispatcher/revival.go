package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
)

// Late inputs before a removal (docs/RELIABILITY.md, finding 14): an
// operator's redrive or reset of a settled run that a dispatcher has not
// taken yet (it may be held by one that died, and come back only after
// the consumer's AckWait) must not lose to the run's removal. Only these
// two kinds can revive a settled run: every other input of a settled run
// is refused whether or not the run is still there. So a removal reads
// the last message of the run's two literal subjects, not the last of
// its whole history, and a bucket of removals reads them for up to
// revivalBatch runs in one direct get.

// revivalBatch is how many runs one revival read covers: two subjects
// each, within what one direct get may name.
const revivalBatch = kvstore.MaxDirectLasts / 2

// revivals returns, for each of runs that has one, its latest redrive or
// reset input (the later of the two), read with one direct get per
// revivalBatch runs. A direct get may be answered by a replica that
// lags the leader by what it has not yet applied; the inputs this guards
// against were stored at least a consumer delivery earlier.
func (d *Dispatcher) revivals(ctx context.Context, runs []string) (map[string]*jetstream.RawStreamMsg, error) {
	names := d.cfg.Names
	last := make(map[string]*jetstream.RawStreamMsg)
	subs := make([]string, 0, 2*min(len(runs), revivalBatch))
	for len(runs) > 0 {
		n := min(len(runs), revivalBatch)
		subs = subs[:0]
		for _, run := range runs[:n] {
			// As stored: a partitioned stream keeps them under the
			// run's partition.
			subs = append(subs, names.StoredInput(names.Redrive(run), d.partitions), names.StoredInput(names.Reset(run), d.partitions))
		}
		gctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		err := kvstore.DirectLasts(gctx, d.js, names.InputStream(), subs, 0, func(m *jetstream.RawStreamMsg) {
			run, _, _, err := names.ParseInput(m.Subject)
			if err != nil {
				return
			}
			if prev := last[run]; prev == nil || m.Sequence > prev.Sequence {
				last[run] = m
			}
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read the latest redrive and reset of %d runs before removing them: %w", n, err)
		}
		runs = runs[n:]
	}
	return last, nil
}

// lateRevival reports until when the removal of a run that settled by
// the input at seq (settled, the settlement's time, stands in when seq
// is 0: entries of an earlier release) must wait for last, its latest
// redrive or reset (nil: none): true when last was stored after the
// settling input and less than inputGrace ago.
func (d *Dispatcher) lateRevival(last *jetstream.RawStreamMsg, seq uint64, settled float64) (time.Time, bool) {
	if last == nil {
		return time.Time{}, false
	}
	until := last.Time.Add(inputGrace(d.cfg.AckWait))
	after := last.Sequence > seq
	if seq == 0 {
		after = float64(last.Time.UnixMilli()) > settled
	}
	return until, after && d.cfg.Clock.Now().Before(until)
}
