package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/startctl"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
)

// controlStart applies a start's idempotency key, singleton key and
// debounce (package startctl) before the start may create its run. It
// returns the outcome and true when the start must not be stepped (it is
// held, a duplicate or refused: the decision is recorded and the input
// may be acknowledged), or false to step it. m is the start message.
func (d *Dispatcher) controlStart(ctx context.Context, in *step.Input, m jetstream.Msg, seq uint64, now float64, log *slog.Logger) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	s, ctl := in.Start, d.ctl
	at := time.UnixMilli(int64(now))
	if db := s.Debounce; db != nil && in.Held != wire.HeldDebounce {
		// From the start's stream time, or from now when this dispatcher
		// takes it later: a hold due already would fire before the later
		// starts of its burst, waiting in the stream behind it, replace it.
		due := laterOf(at, d.cfg.Clock.Now()).Add(time.Duration(db.Ms * float64(time.Millisecond)))
		if err := d.holdDebounced(ctx, in, m, seq, now, due, log); err != nil {
			return "", false, err
		}
		return outcomeStartHeld, true, nil
	}
	if k := s.IdempotencyKey; k != "" {
		first, dup, err := ctl.ClaimIdempotency(ctx, k, in.RunID)
		if err != nil {
			return "", false, err
		}
		if dup {
			if err := ctl.Record(ctx, in.RunID, wire.StartDecision{Outcome: wire.StartOutcomeDuplicate, Run: first, Key: k, At: now}); err != nil {
				return "", false, err
			}
			log.Info("dispatcher: start is a duplicate: its idempotency key started another run", slog.String("first_run", first))
			return outcomeStartDuplicate, true, nil
		}
	}
	if g := s.Singleton; g != nil {
		holder, err := ctl.ClaimSingleton(ctx, g.Key, in.RunID, at, d.runState)
		if err != nil {
			return "", false, err
		}
		if holder != "" {
			return d.singletonBusy(ctx, in, m, holder, at, log)
		}
	}
	if in.Held != "" {
		// It starts now: what was said of it no longer holds.
		if err := ctl.Forget(ctx, in.RunID); err != nil {
			return "", false, err
		}
	}
	return "", false, nil
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// singletonBusy refuses or queues a start whose singleton key another
// active run holds.
func (d *Dispatcher) singletonBusy(ctx context.Context, in *step.Input, m jetstream.Msg, holder string, at time.Time, log *slog.Logger) (string, bool, error) {
	s, ctl, now := in.Start, d.ctl, float64(at.UnixMilli())
	g := s.Singleton
	if g.Mode == wire.SingletonQueue {
		round := 0
		if in.Held == wire.HeldSingleton {
			round = in.HeldRound + 1
		}
		due := laterOf(at, d.cfg.Clock.Now()).Add(startctl.QueueDelay(round))
		h := startctl.Hold(d.cfg.Names, d.cfg.Names.SingletonHold(startctl.Digest(g.Key), in.RunID), in.RunID, wire.HeldSingleton, m, due)
		h.Header.Set(wire.HeaderHeldRound, strconv.Itoa(round))
		if _, err := d.js.PublishMsg(ctx, h); err != nil {
			return "", false, fmt.Errorf("queue the start behind run %s: %w", holder, err)
		}
		if round == 0 {
			if err := ctl.Record(ctx, in.RunID, wire.StartDecision{Outcome: wire.StartOutcomeQueued, Run: holder, Key: g.Key, At: now}); err != nil {
				return "", false, err
			}
			log.Info("dispatcher: start queued behind the active run of its singleton key", slog.String("active_run", holder))
		}
		return outcomeStartHeld, true, nil
	}
	if k := s.IdempotencyKey; k != "" {
		// Refused: the key started nothing, and a retry is judged again.
		if err := ctl.ReleaseIdempotency(ctx, k, in.RunID); err != nil {
			return "", false, err
		}
	}
	if err := ctl.Record(ctx, in.RunID, wire.StartDecision{Outcome: wire.StartOutcomeRefused, Run: holder, Key: g.Key, At: now}); err != nil {
		return "", false, err
	}
	log.Info("dispatcher: start refused: the active run of its singleton key holds it", slog.String("active_run", holder))
	return outcomeStartRefused, true, nil
}

// holdDebounced publishes the start's hold on its debounce key's
// schedule subject, replacing the hold of an earlier start of the burst,
// unless a later start (by input sequence) was marked first (a
// redelivery of an older one, or a later start another dispatcher took
// first: startctl.MarkDebounced). The publish expects the subject's last
// sequence it read, so of two dispatchers holding starts of one key at
// once, the later start's hold stands: the earlier one's publish fails
// and finds the later mark. The run it replaces is told so.
func (d *Dispatcher) holdDebounced(ctx context.Context, in *step.Input, m jetstream.Msg, seq uint64, now float64, due time.Time, log *slog.Logger) error {
	key := in.Start.Debounce.Key
	subject := d.cfg.Names.DebounceHold(startctl.Digest(key))
	recorded := false
	for {
		prev, err := d.timers.GetLastMsgForSubject(ctx, subject)
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("debounce key %q: %w", key, err)
		}
		var prevRun string
		var last uint64
		if prev != nil {
			last = prev.Sequence
			prevRun = prev.Header.Get(wire.HeaderRunID)
		}
		later, err := d.ctl.MarkDebounced(ctx, key, seq, in.RunID)
		if err != nil {
			return err
		}
		if later != "" {
			// A later start of the burst came first: this one is
			// replaced already (or its burst fired without it).
			log.Info("dispatcher: debounced start already replaced", slog.String("by_run", later))
			return d.ctl.Record(ctx, in.RunID, wire.StartDecision{Outcome: wire.StartOutcomeReplaced, Run: later, Key: key, At: now})
		}
		if !recorded {
			// Before the hold: a later start that replaces it says so
			// after this.
			if err := d.ctl.Record(ctx, in.RunID, wire.StartDecision{Outcome: wire.StartOutcomeDebounced, Key: key, Due: float64(due.UnixMilli()), At: now}); err != nil {
				return err
			}
			recorded = true
		}
		h := startctl.Hold(d.cfg.Names, subject, in.RunID, wire.HeldDebounce, m, due)
		h.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		_, err = d.js.PublishMsg(ctx, h)
		var ae *jetstream.APIError
		if errors.As(err, &ae) && (ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || ae.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			continue // another hold came between: look again
		}
		if err != nil {
			return fmt.Errorf("debounce key %q: hold the start: %w", key, err)
		}
		log.Info("dispatcher: start held by its debounce key", slog.Time("due", due))
		if prevRun != "" && prevRun != in.RunID {
			return d.ctl.Record(ctx, prevRun, wire.StartDecision{Outcome: wire.StartOutcomeReplaced, Run: in.RunID, Key: key, At: float64(due.UnixMilli())})
		}
		return nil
	}
}

// runState is a singleton holder's state, from its record.
func (d *Dispatcher) runState(ctx context.Context, runID string) (startctl.RunState, error) {
	data, _, err := d.store.Get(ctx, runID, kvstore.FromLeader())
	if errors.Is(err, kvstore.ErrRunNotFound) {
		return startctl.RunAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	rec, err := runrecord.Decode(data)
	if _, ok := removedRun(err); ok {
		return startctl.RunSettled, nil
	}
	if err != nil {
		return 0, err
	}
	if rec.Status != nil && run.Status(rec.Status.Status).Terminal() {
		return startctl.RunSettled, nil
	}
	return startctl.RunActive, nil
}
