package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/startctl"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// hookPoint names a crash point a test can stop a step at.
type hookPoint string

const (
	hookAfterSave    hookPoint = "after_save"
	hookAfterPublish hookPoint = "after_publish"
	// hookAfterTombstone: a removal wrote the tombstone, purged nothing.
	hookAfterTombstone hookPoint = "after_tombstone"
	// hookAfterReapRead: a bucket of removals read its due entries and
	// removed their runs, and purged none of the entries.
	hookAfterReapRead hookPoint = "after_reap_read"
)

// hooks lets tests simulate a crash: when at returns errCrash, the step
// stops there and the input is left unacknowledged, as after a kill.
type hooks struct {
	at func(p hookPoint, runID, kind string) error
	// save, when set, fails a record write of runID with the error it
	// returns, as a store that timed out does.
	save func(runID string) error
	// stored, when set, fails a record write of runID that was stored
	// with the error it returns, as a reply lost to a timeout does.
	stored func(runID string) error
	// publish, when set, fails the publish of a message to subject with
	// the error it returns, as a server outage does mid-flush.
	publish func(subject string) error
	// stray, when set, is called before a batched judgement terminates
	// an input for no run (a test slows the stray lane with it).
	stray func()
}

var errCrash = errors.New("simulated crash")

// unknownWorkflowDeliveries is how many deliveries an input naming an
// undeployed workflow gets before it is terminated.
const unknownWorkflowDeliveries = 3

func (d *Dispatcher) hook(p hookPoint, in *step.Input) error {
	if d.cfg.CrashHook != nil {
		if err := d.cfg.CrashHook(string(p), in.RunID, in.Kind); err != nil {
			return fmt.Errorf("%w at %s: %w", errCrash, p, err)
		}
	}
	if d.cfg.hooks == nil || d.cfg.hooks.at == nil {
		return nil
	}
	return d.cfg.hooks.at(p, in.RunID, in.Kind)
}

// handle takes one input from receipt to acknowledgement. Whatever the
// input holds, it returns after acking, terminating or handing it back;
// it reports whether the step failed on a round trip that timed out.
func (d *Dispatcher) handle(ctx context.Context, m jetstream.Msg) (timedOut bool) {
	if d.crashed.Load() {
		return
	}
	began := time.Now()
	meta, err := m.Metadata()
	if err != nil {
		d.log.Error("dispatcher: input without JetStream metadata", slog.String("subject", m.Subject()), slog.Any("error", err))
		d.m.messages.WithLabelValues("unknown", outcomeMalformed).Inc()
		_ = m.Term()
		return
	}
	if meta.NumDelivered > 1 {
		d.m.redelivery.Inc()
	}
	// Logs carry ids, sizes and reasons, never payloads; reasons and
	// subjects are bounded because hostile inputs choose them.
	size := slog.Int("bytes", len(m.Data()))
	in, err := d.parse(ctx, m)
	if err != nil && in == nil && !errors.Is(err, step.ErrMalformed) {
		// The payload bucket could not be read: not the input's fault.
		d.log.Warn("dispatcher: reading an input's payload failed, will retry", slog.String("subject", truncate(m.Subject(), maxLogged)),
			slog.Uint64("stream_seq", meta.Sequence.Stream), slog.Any("error", err))
		d.m.messages.WithLabelValues(kindOf(d, m.Subject()), outcomeRetry).Inc()
		_ = m.NakWithDelay(d.retryDelay(meta.NumDelivered))
		return
	}
	if err != nil && in == nil {
		log := d.log
		if runID, kind, _, perr := d.cfg.Names.ParseInput(m.Subject()); perr == nil && subjects.CheckRunID(runID) == nil {
			log = log.With(slog.String("run_id", runID), slog.String("kind", kind))
		}
		log.Warn("dispatcher: malformed input terminated", slog.String("subject", truncate(m.Subject(), maxLogged)),
			slog.Uint64("stream_seq", meta.Sequence.Stream), size, slog.String("reason", truncate(err.Error(), maxLogged)))
		d.m.messages.WithLabelValues(kindOf(d, m.Subject()), outcomeMalformed).Inc()
		_ = m.TermWithReason(truncate(err.Error(), 256))
		return
	}
	log := d.log.With(slog.String("run_id", in.RunID), slog.String("kind", in.Kind), slog.Uint64("stream_seq", meta.Sequence.Stream), size)
	now := float64(meta.Timestamp.UnixMilli())
	if in.Kind == subjects.KindStart && startctl.Controlled(in.Start) {
		outcome, done, err := d.controlStart(ctx, in, m, meta.Sequence.Stream, now, log)
		if err != nil && context.Cause(ctx) == nil {
			log.Warn("dispatcher: start controls failed, the start will be redelivered", slog.Any("error", err))
			_ = m.NakWithDelay(d.retryDelay(meta.NumDelivered))
			d.m.messages.WithLabelValues(in.Kind, outcomeRetry).Inc()
			return
		}
		if err != nil {
			_ = m.Nak()
			d.m.messages.WithLabelValues(in.Kind, outcomeAbandoned).Inc()
			return
		}
		if done {
			_ = m.Ack()
			d.m.messages.WithLabelValues(in.Kind, outcome).Inc()
			return
		}
	}
	outcome, err := d.step(d.withDelivery(ctx, meta.NumDelivered, m.Headers()), in, meta.Sequence.Stream, now, log)
	var deferred *deferredError
	switch {
	case errors.Is(err, errCrash):
		d.crashed.Store(true)
		log.Info("dispatcher: simulated crash")
		return
	case err == nil:
		_ = m.Ack()
	case errors.Is(err, errRemoved):
		outcome = outcomeRemovedRun
		d.refuseRemoved(m, err, log)
	case errors.Is(err, errNoRun) && in.Kind == subjects.KindExpire:
		// Its tombstone expired, or a removal redelivered that long after.
		outcome = outcomeUnknownRun
		_ = m.TermWithReason(truncate(fmt.Sprintf("run %s has no record: nothing to remove", in.RunID), 256))
	case errors.Is(err, errNoRun):
		outcome = d.noRun(ctx, m, meta, in, log)
	case errors.Is(err, errPostponed):
		outcome = outcomePostponed
		_ = m.NakWithDelay(d.retryDelay(meta.NumDelivered))
	case errors.As(err, &deferred):
		outcome = outcomeDeferred
		_ = m.NakWithDelay(max(deferred.until.Sub(d.cfg.Clock.Now()), d.cfg.RetryDelay))
	case errors.Is(err, registry.ErrUnknownWorkflow) && meta.NumDelivered < unknownWorkflowDeliveries:
		// A replica may not have a deployment made just before the start.
		outcome = outcomeRetry
		log.Warn("dispatcher: workflow not found, will look again", slog.Any("error", err))
		_ = m.NakWithDelay(d.retryDelay(meta.NumDelivered))
	case context.Cause(ctx) != nil:
		outcome = outcomeAbandoned
		log.Info("dispatcher: input handed back at stop", slog.Any("error", err))
		_ = m.Nak()
	case errors.Is(err, step.ErrMalformed) || errors.Is(err, registry.ErrUnknownWorkflow) || errors.Is(err, step.ErrPermanent) || tooLarge(err):
		outcome = outcomeFailed
		if errors.Is(err, registry.ErrUnknownWorkflow) {
			outcome = outcomeUnknownWorkflow
		}
		if tooLarge(err) {
			err = fmt.Errorf("a message this input produced (the run record or an effect) is larger than NATS accepts: %w", err)
		}
		log.Error("dispatcher: input terminated", slog.String("reason", truncate(err.Error(), maxLogged)))
		_ = m.TermWithReason(truncate(err.Error(), 256))
	default:
		outcome = outcomeRetry
		delay := d.retryDelay(meta.NumDelivered)
		log.Warn("dispatcher: step failed, input will be redelivered", slog.Any("error", err), slog.Duration("delay", delay))
		_ = m.NakWithDelay(delay)
		timedOut = isTimeout(err)
	}
	d.m.messages.WithLabelValues(in.Kind, outcome).Inc()
	d.m.step.WithLabelValues(in.Kind).Observe(time.Since(began).Seconds())
	return timedOut
}

// parse reads an input, resolving a body that came by reference
// (docs/PROTOCOL.md 2.4). A bad reference (missing object, digest or size
// mismatch) is malformed, as step.Parse's refusals are: a run records it
// where status and history show it. Any other failure to read the bucket
// is returned alone, without an input, for a redelivery.
func (d *Dispatcher) parse(ctx context.Context, m jetstream.Msg) (*step.Input, error) {
	data := m.Data()
	if m.Headers().Get(wire.HeaderPayload) != "" {
		// (The read may outlast OpTimeout by a time sized to the body.)
		rctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		body, _, err := d.payloads.Body(rctx, m.Headers(), data)
		cancel()
		if errors.Is(err, payload.ErrBadRef) || errors.Is(err, payload.ErrNoBucket) {
			return step.Refuse(d.settings, m.Subject(), err)
		}
		if err != nil {
			return nil, err
		}
		data = body
	}
	return step.Parse(d.settings, m.Subject(), m.Headers(), data)
}

// abandon hands back an input no step took up, because the dispatcher is
// stopping.
func (d *Dispatcher) abandon(m jetstream.Msg) {
	if !d.crashed.Load() {
		d.m.messages.WithLabelValues(kindOf(d, m.Subject()), outcomeAbandoned).Inc()
		_ = m.Nak()
	}
}

func (d *Dispatcher) retryDelay(delivered uint64) time.Duration {
	delay := d.cfg.RetryDelay
	for i := uint64(1); i < delivered && delay < d.cfg.MaxRetryDelay; i++ {
		delay *= 2
	}
	return min(delay, d.cfg.MaxRetryDelay)
}

// noRunDelay is the redelivery delay of an input whose run has no record
// yet. Its start is usually being saved by another dispatcher at that very
// moment, so the first retries come fast (5ms, doubling) up to the
// ordinary retry delay.
func noRunDelay(delivered uint64, ordinary time.Duration) time.Duration {
	delay := 5 * time.Millisecond
	for i := uint64(1); i < delivered && delay < ordinary; i++ {
		delay *= 2
	}
	return min(delay, ordinary)
}

func kindOf(d *Dispatcher, subject string) string {
	if _, kind, _, err := d.cfg.Names.ParseInput(subject); err == nil {
		return kind
	}
	return "unknown"
}

// maxLogged bounds the reasons and subjects a log line repeats.
const maxLogged = 512

// tooLarge reports a write refused for its size (by the client against
// the server's max_payload, or by the stream's max message size): no
// redelivery can cure it.
func tooLarge(err error) bool {
	var ae *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
}

// truncate bounds a termination reason (it travels in an advisory).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
