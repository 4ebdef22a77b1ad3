package dispatcher

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/runrecord"
)

// Sequence pages (docs/ARCHITECTURE.md, "History"): a run's record names
// only its last AppliedHistory inputs, so each time a run's applied
// inputs pass a multiple of runrecord.PageSize the dispatcher stores the
// sequences of the last PageSize in the input stream, on a subject of the
// run's own outside the run inputs (subjects.Names.Page), and a removal
// that keeps the history stores the rest the record names. A history
// read then finds every input by sequence (replay.ReadHistory) instead of
// scanning the stream between a run's messages. Pages are hints, checked
// by the reader against the run's subjects: a page that is missing (not
// written, see writePage) costs that read a walk, nothing more.

// pages is what Start found out about sequence pages.
type pages struct {
	// on: the input stream takes them (provisioned with PagesAll).
	on bool
	// offUntil (Unix nanoseconds) is set when a write timed out: a role
	// without the right to publish them, whose refusal is never
	// answered, or an outage. None is written for pagesPause after it,
	// so that a refused right delays one step in pagesPause, not every
	// 128th, and an outage does not end pages for good.
	offUntil atomic.Int64
}

// pagesPause is how long a timed-out page write stops the writing.
const pagesPause = time.Minute

// startPages checks whether the input stream takes sequence pages.
func (d *Dispatcher) startPages(inputs jetstream.Stream) {
	d.pg.on = slices.Contains(inputs.CachedInfo().Config.Subjects, d.cfg.Names.PagesAll())
	if !d.pg.on {
		d.log.Info("dispatcher: the input stream takes no sequence pages (provision again: jetflow dispatcher --provision): history reads of long-lived runs walk the stream for the inputs their records no longer name",
			slog.String("stream", d.cfg.Names.InputStream()))
	}
}

// writing reports whether pages are written at now.
func (p *pages) writing(now time.Time) bool { return p.on && now.UnixNano() >= p.offUntil.Load() }

// writePage stores the run's page owed by the step from prev (nil when
// not decoded: the step counted one message) to next, whose record is
// rec, if it owes one. It comes before the record's save: a step
// repeated after a crash, or after a lost compare-and-swap on the same
// record, owes the same page, which the create-if-absent write then
// leaves as it was.
func (d *Dispatcher) writePage(ctx context.Context, runID string, prev, next *run.State, rec *runrecord.Record, log *slog.Logger) {
	if !d.pg.on || next == nil {
		return // a pause is storePage's to judge, on the rare step that owes a page
	}
	size := min(runrecord.PageSize, d.settings.AppliedHistory)
	from := next.Seq - 1
	if prev != nil {
		from = prev.Seq
	}
	if runrecord.PageDue(from, next.Seq, size) {
		d.storePage(ctx, runID, rec.Page(size), log)
	}
}

// storePage stores one page of the run's input sequences, unless its
// subject holds one already (the same, from a repeat). A failure is
// logged and costs only reads: the history stays whole.
func (d *Dispatcher) storePage(ctx context.Context, runID string, seqs []uint64, log *slog.Logger) {
	if len(seqs) == 0 || !d.pg.writing(d.cfg.Clock.Now()) {
		return
	}
	m := nats.NewMsg(d.cfg.Names.Page(runID, seqs[0]))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Data = runrecord.EncodePage(seqs)
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	_, err := d.js.PublishMsg(ctx, m)
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		// Stored before: by this step's first try, or another dispatcher.
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders):
		d.pg.offUntil.Store(d.cfg.Clock.Now().Add(pagesPause).UnixNano())
		log.Warn("dispatcher: a sequence page was not stored in time; none is written for a minute (does this dispatcher's role allow publishing "+d.cfg.Names.PagesAll()+"? docs/SECURITY.md)",
			slog.String("subject", m.Subject), slog.Any("error", err))
	default:
		log.Warn("dispatcher: sequence page not stored: history reads walk the stream for its inputs", slog.String("subject", m.Subject), slog.Any("error", err))
	}
}

// finalPage stores, for a run removed with its history kept, the page
// of every input its record still names; with its earlier pages, it
// names the whole history once the record is gone.
func (d *Dispatcher) finalPage(ctx context.Context, runID string, rec *runrecord.Record, log *slog.Logger) {
	if d.ret.keepHistory && rec != nil {
		d.storePage(ctx, runID, rec.FinalPage(), log)
	}
}
