package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/step"
)

// An input can reach a dispatcher before its run has a record: its start
// is in another dispatcher's hands. Such an input is handed back for a
// moment, and while it waits it holds one of the consumer's
// MaxAckPending places, which every run shares. So only inputs whose
// start is really in the stream before them wait, and only so many: an
// input for a run that was never started, or that came before its start,
// is terminated at once with its reason.

// earlyInputs counts the inputs this process has handed back to wait for
// their runs' starts, per run and in all, until each one's delay ends.
type earlyInputs struct {
	mu     sync.Mutex
	byRun  map[string][]time.Time // the end of each held input's delay
	total  int
	pruned time.Time
}

// admit reserves a place for an input of runID held until until, or
// reports false when the run or the process holds its limit already.
func (e *earlyInputs) admit(runID string, now, until time.Time, perRun, all int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byRun == nil {
		e.byRun = map[string][]time.Time{}
	}
	if now.Sub(e.pruned) > time.Second || e.total >= all {
		e.prune(now)
	}
	held := e.live(runID, now)
	if len(held) >= perRun || e.total >= all {
		return false
	}
	e.byRun[runID] = append(held, until)
	e.total++
	return true
}

// live drops runID's delays that are over and returns the others.
func (e *earlyInputs) live(runID string, now time.Time) []time.Time {
	held := e.byRun[runID]
	kept := held[:0]
	for _, t := range held {
		if t.After(now) {
			kept = append(kept, t)
		}
	}
	e.total -= len(held) - len(kept)
	if len(kept) == 0 {
		delete(e.byRun, runID)
		return nil
	}
	e.byRun[runID] = kept
	return kept
}

func (e *earlyInputs) prune(now time.Time) {
	for runID := range e.byRun {
		e.live(runID, now)
	}
	e.pruned = now
}

// noRun decides about an input whose run has no record: hand it back to
// wait for its start, or terminate it with the reason. It returns the
// outcome for the metrics.
func (d *Dispatcher) noRun(ctx context.Context, m jetstream.Msg, meta *jetstream.MsgMetadata, in *step.Input, log *slog.Logger) string {
	reason := d.noRunReason(ctx, m.Subject(), meta, in)
	if reason == "" {
		now := d.cfg.Clock.Now()
		delay := min(noRunDelay(meta.NumDelivered, d.cfg.RetryDelay), d.cfg.UnknownRunWait-now.Sub(meta.Timestamp))
		perRun := max(1, d.cfg.MaxEarlyInputs/4)
		if d.early.admit(in.RunID, now, now.Add(delay), perRun, d.cfg.MaxEarlyInputs) {
			_ = m.NakWithDelay(delay)
			return outcomeRetry
		}
		reason = fmt.Sprintf("no run %s yet, and this dispatcher already holds its limit of inputs waiting for their runs' starts (%d per run, %d in all: Config.MaxEarlyInputs)",
			in.RunID, perRun, d.cfg.MaxEarlyInputs)
	}
	return d.refuseNoRun(m, in, log, reason)
}

// refuseNoRun terminates an input whose run does not exist.
func (d *Dispatcher) refuseNoRun(m jetstream.Msg, in *step.Input, log *slog.Logger, reason string) string {
	if d.unknownLog.allow(d.cfg.Clock.Now()) {
		log.Warn("dispatcher: input for an unknown run terminated", slog.String("reason", reason),
			slog.Int("suppressed_since_last", d.unknownLog.takeSuppressed()))
	}
	_ = m.TermWithReason(truncate(reason, 256))
	if in.Refused() != nil {
		return outcomeMalformed
	}
	return outcomeUnknownRun
}

// noRunReason is why an input for a run without a record is terminated
// now, or "" when it may wait for its start. subject is the input's as
// stored.
func (d *Dispatcher) noRunReason(ctx context.Context, subject string, meta *jetstream.MsgMetadata, in *step.Input) string {
	if reason := d.waitedTooLong(meta, in); reason != "" {
		return reason
	}
	// The record read may have met a server that lags, and so may a read
	// through the stream's leader: one just elected was seen to answer
	// "none" for a start stored seconds before (a 30-minute chaos run
	// terminated a live run's result so). The start's absence counts only
	// as read by a server that holds this very input, and so every
	// message stored before it.
	last, covered, err := d.lastStart(ctx, subject, meta.Sequence.Stream, in.RunID)
	switch {
	case err != nil || !covered:
		return "" // cannot tell: wait, bounded by UnknownRunWait
	case last == 0:
		return startReason(meta, in, 0, nil)
	case last < meta.Sequence.Stream:
		return "" // its start, and so its first, came before it
	}
	// A start after the input: whether the first came before it, through
	// the leader, as a retried start call can store a second one after it.
	seq, err := d.startSeq(ctx, in.RunID)
	if seq == 0 {
		return "" // the leader has not caught up with the server above
	}
	return startReason(meta, in, seq, err)
}

// lastStart reads the last message of each of the run's start subjects
// and of subject (the input's, stored at seq) in one direct get. It
// returns the latest start's stream sequence (0: none) and whether the
// server that answered holds the input (covered), so that a start stored
// before it would have been found.
func (d *Dispatcher) lastStart(ctx context.Context, subject string, seq uint64, runID string) (last uint64, covered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	starts := d.cfg.Names.StoredStarts(runID, d.partitions)
	whole, err := kvstore.DirectLastsAll(ctx, d.js, d.cfg.Names.InputStream(), append(slices.Clip(starts), subject), func(m *jetstream.RawStreamMsg) {
		if m.Subject == subject && m.Sequence >= seq {
			covered = true
		}
		if slices.Contains(starts, m.Subject) {
			last = max(last, m.Sequence)
		}
	})
	if err != nil || !whole {
		return 0, false, err
	}
	return last, covered, nil
}

// waitedTooLong is why an input whose run has no record is terminated
// without looking for its start: it waited UnknownRunWait already.
func (d *Dispatcher) waitedTooLong(meta *jetstream.MsgMetadata, in *step.Input) string {
	if age := d.cfg.Clock.Now().Sub(meta.Timestamp); age >= d.cfg.UnknownRunWait {
		return withRefusal(fmt.Sprintf("no run %s after %s: its start was never applied", in.RunID, d.cfg.UnknownRunWait), in)
	}
	return ""
}

// startReason is why an input whose run has no record is terminated,
// given the stream sequence of its run's first start (0: none) or the
// error that kept it from being read; "" when it may wait.
func startReason(meta *jetstream.MsgMetadata, in *step.Input, seq uint64, err error) string {
	switch {
	case err != nil:
		return "" // cannot tell: wait, bounded by UnknownRunWait
	case seq == 0:
		return withRefusal(fmt.Sprintf("no run %s: the input stream holds no start for it", in.RunID), in)
	case seq > meta.Sequence.Stream:
		return withRefusal(fmt.Sprintf("no run %s when this input came: its start (stream sequence %d) came after it", in.RunID, seq), in)
	}
	return ""
}

// withRefusal adds why a malformed input could not have applied anyway.
func withRefusal(reason string, in *step.Input) string {
	if in.Refused() != nil {
		reason += ", and the input is malformed: " + in.Refused().Error()
	}
	return reason
}

// startSeq is the stream sequence of the run's first start, 0 if the
// input stream holds none. The first, not the last: a client that retries
// a start call can store a second start after the run's first inputs. It
// is one read through the stream's leader: a lagging replica's "none"
// would refuse an input of a live run.
func (d *Dispatcher) startSeq(ctx context.Context, runID string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	var first uint64
	// In a partitioned stream, a run started before the partitions has
	// its start on the published subject: the earliest of both.
	for _, subject := range d.cfg.Names.StoredStarts(runID, d.partitions) {
		seq, err := kvstore.FirstOnSubject(ctx, d.js, d.cfg.Names.InputStream(), subject)
		if err != nil {
			return 0, err
		}
		if seq > 0 && (first == 0 || seq < first) {
			first = seq
		}
	}
	return first, nil
}

// throttle lets one log line a second through and counts the rest, so
// that a flood of bad inputs cannot flood the log.
type throttle struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (t *throttle) allow(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.last) < time.Second {
		t.suppressed++
		return false
	}
	t.last = now
	return true
}

func (t *throttle) takeSuppressed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.suppressed
	t.suppressed = 0
	return n
}
