package dispatcher

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// Stray inputs judged in batches.
//
// Stepped alone, an input for no run costs three requests before it is
// terminated (its record, then its run's start through the stream
// leader, then the termination), so a dispatcher got through a flood of
// them at about 6,000 a second, and the inputs of good runs behind more
// strays than one partition's window in the stream waited for that. When
// the stray lane holds more than one run, a step goroutine takes up to
// strayBatch of them and judges their first inputs with two batched
// reads: the last message of each run's key in the run bucket, and the
// last start of each run in the input stream, together with the latest
// of the inputs judged. A replica that answers with that input holds
// every message before it, so its "no start" is the leader's. An input
// whose run has neither record nor start is terminated with the reason
// its own step would have given; every other one (a run with a record, a
// start, a payload by reference; any doubt) goes back to be stepped
// alone, ahead of the lane.

// strayBatch is the most runs one batched judgement takes: two subjects
// each, and the cover, within one direct get's kvstore.MaxDirectLasts.
const strayBatch = 256

// takeStrays takes up to strayBatch queues from the head of the stray
// lane; qmu is held.
func (d *Dispatcher) takeStrays() []*runQueue {
	n := min(len(d.stray), strayBatch)
	batch := make([]*runQueue, n)
	copy(batch, d.stray)
	clear(d.stray[:n])
	d.stray = d.stray[n:]
	return batch
}

// stepStrays judges the first input of each queue of batch together,
// terminates those of no run, and puts the others in the judged lane to
// be stepped alone; qmu is held on entry and on return.
func (d *Dispatcher) stepStrays(batch []*runQueue) {
	heads := make([]jetstream.Msg, len(batch))
	for i, q := range batch {
		heads[i] = q.msgs[0].m
	}
	d.qmu.Unlock()
	gone := d.judgeStrays(d.ctx, heads)
	d.qmu.Lock()
	back := 0
	for i, q := range batch {
		if !gone[i] {
			d.judged = append(d.judged, q)
			back++
			continue
		}
		m := q.msgs[0].m
		q.msgs[0] = heldMsg{}
		q.msgs = q.msgs[1:]
		d.finish(q, m)
	}
	for range back {
		d.strayCond.Signal()
		d.bothCond.Signal()
	}
}

// judgeStrays terminates each of heads whose run has no record and no
// start, and reports which it terminated.
func (d *Dispatcher) judgeStrays(ctx context.Context, heads []jetstream.Msg) []bool {
	gone := make([]bool, len(heads))
	bucket := d.runBucket()
	if bucket == "" || d.crashed.Load() || ctx.Err() != nil {
		return gone
	}
	began := time.Now()
	type judged struct {
		i     int
		runID string
		meta  *jetstream.MsgMetadata
	}
	var cands []judged
	var cover string
	var coverSeq uint64
	for i, m := range heads {
		runID, ok := batchJudged(d.cfg.Names, m)
		if !ok {
			continue
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		cands = append(cands, judged{i, runID, meta})
		if meta.Sequence.Stream > coverSeq {
			cover, coverSeq = m.Subject(), meta.Sequence.Stream
		}
	}
	if len(cands) == 0 {
		return gone
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	known := make(map[string]bool, len(cands))
	keys := make([]string, 0, len(cands))
	for _, c := range cands {
		if _, dup := known[c.runID]; !dup {
			known[c.runID] = false
			keys = append(keys, d.cfg.Names.KVKey(bucket, c.runID))
		}
	}
	keyPrefix := d.cfg.Names.KVKeyPrefix(bucket)
	whole, err := kvstore.DirectLastsAll(rctx, d.js, d.cfg.Names.KVStream(bucket), keys, func(m *jetstream.RawStreamMsg) {
		known[strings.TrimPrefix(m.Subject, keyPrefix)] = true
	})
	if err != nil || !whole {
		return gone
	}
	// The inputs of runs with records (parked runs' events, most often)
	// are stepped alone and need no look at the input stream.
	starts := []string{cover}
	for runID, recorded := range known {
		if !recorded {
			starts = append(starts, d.cfg.Names.StoredStarts(runID, d.partitions)...)
		}
	}
	if len(starts) == 1 {
		return gone
	}
	covered := false
	whole, err = kvstore.DirectLastsAll(rctx, d.js, d.cfg.Names.InputStream(), starts, func(m *jetstream.RawStreamMsg) {
		if m.Subject == cover {
			covered = m.Sequence >= coverSeq
			return
		}
		if runID, kind, _, err := d.cfg.Names.ParseInput(m.Subject); err == nil && kind == subjects.KindStart {
			known[runID] = true
		}
	})
	if err != nil || !whole || !covered {
		return gone
	}
	for _, c := range cands {
		if known[c.runID] {
			continue
		}
		m := heads[c.i]
		in, err := step.Parse(d.settings, m.Subject(), m.Headers(), m.Data())
		if err != nil && in == nil {
			continue // malformed: its own step says so
		}
		reason := d.waitedTooLong(c.meta, in)
		if reason == "" {
			reason = startReason(c.meta, in, 0, nil)
		}
		if d.cfg.hooks != nil && d.cfg.hooks.stray != nil {
			d.cfg.hooks.stray()
		}
		if c.meta.NumDelivered > 1 {
			d.m.redelivery.Inc()
		}
		log := d.log.With(slog.String("run_id", in.RunID), slog.String("kind", in.Kind), slog.Uint64("stream_seq", c.meta.Sequence.Stream), slog.Int("bytes", len(m.Data())))
		d.m.messages.WithLabelValues(in.Kind, d.refuseNoRun(m, in, log, reason)).Inc()
		d.m.strayBatched.Inc()
		d.m.step.WithLabelValues(in.Kind).Observe(time.Since(began).Seconds())
		gone[c.i] = true
	}
	return gone
}

// batchJudged reports whether m may be judged in a batch, and its run:
// an event, cancel or result of a well-formed run id, carried whole.
func batchJudged(names subjects.Names, m jetstream.Msg) (string, bool) {
	runID, kind, _, err := names.ParseInput(m.Subject())
	if err != nil || subjects.CheckRunID(runID) != nil || m.Headers().Get(wire.HeaderPayload) != "" {
		return "", false
	}
	switch kind {
	case subjects.KindEvent, subjects.KindCancel, subjects.KindResult:
		return runID, true
	}
	return "", false
}

// runBucket is the run bucket's name when the store is one, "" for a
// store that batched reads cannot see.
func (d *Dispatcher) runBucket() string {
	if s, ok := d.store.(interface{ Bucket() string }); ok {
		return s.Bucket()
	}
	return ""
}
