package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrUnsafeInputStream is wrapped by Provision's error when the input
// stream exists with settings that let any publisher of one run input act
// on every other message, and that the server cannot turn off.
var ErrUnsafeInputStream = errors.New("input stream obeys scheduling and roll-up headers")

// InputStreamError is the error of Provision on an input stream made by a
// jetflow older than the timer stream: it holds timer schedules itself, so
// it allows message schedules and, with them, roll-ups. The server never
// turns schedules off again, so the stream must be replaced, by
// MigrateInputStream or by hand; Provision changes nothing until then.
type InputStreamError struct {
	// Stream is the input stream's name.
	Stream string
	// TimerStream is the stream that holds timers now.
	TimerStream string
	// Schedules is how many timer schedules the stream still holds.
	Schedules int
}

func (e *InputStreamError) Error() string {
	return fmt.Sprintf("provision: input stream %q was made by an older jetflow and allows message schedules, "+
		"hence roll-ups, which the server cannot turn off: anyone allowed to publish one run input could erase the "+
		"stream (Nats-Rollup: all) or forge timer fires (Nats-Schedule). It holds %d pending timer schedules. "+
		"Stop every dispatcher, back up the stream if you need its history (nats stream backup %s DIR), then run "+
		"provision.MigrateInputStream: it moves the pending timers to %q and unconsumed inputs to a new, safe %q, "+
		"and drops the old history. Deleting the stream by hand (nats stream rm %s) and provisioning again also "+
		"works, but loses the pending timers: runs waiting on them wait until cancelled",
		e.Stream, e.Schedules, e.Stream, e.TimerStream, e.Stream, e.Stream)
}

// Is makes errors.Is(err, ErrUnsafeInputStream) hold.
func (e *InputStreamError) Is(target error) bool { return target == ErrUnsafeInputStream }

func unsafeInput(ctx context.Context, s jetstream.Stream, names subjects.Names) error {
	e := &InputStreamError{Stream: names.InputStream(), TimerStream: names.TimerStream(), Schedules: -1}
	if info, err := s.Info(ctx, jetstream.WithSubjectFilter(names.ScheduleAll())); err == nil {
		e.Schedules = len(info.State.Subjects)
	}
	return e
}

// bindStream returns the named stream, or nil if it does not exist,
// retrying transient errors.
func bindStream(ctx context.Context, js jetstream.JetStream, name string, retryFor time.Duration) (jetstream.Stream, error) {
	s, err := kvstore.Retry(ctx, retryFor, func() (jetstream.Stream, error) {
		actx, cancel := context.WithTimeout(ctx, DefaultAttemptTimeout)
		defer cancel()
		s, err := js.Stream(actx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil
		}
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return s, kvstore.Classify(err)
	})
	if err != nil {
		return nil, fmt.Errorf("provision: inspect stream %q: %w", name, err)
	}
	return s, nil
}

// MaxMigratedInputs bounds the unconsumed inputs MigrateInputStream
// carries over (it holds them in memory while the stream is replaced).
const MaxMigratedInputs = 100_000

// Migration says what MigrateInputStream did.
type Migration struct {
	// Schedules is how many pending timer schedules moved to the timer
	// stream (retargeted to fire through it).
	Schedules int
	// Inputs is how many unconsumed inputs moved to the new input stream.
	Inputs int
	// Dropped is how many messages of history went with the old stream.
	Dropped uint64
	// FirstSeq is the new input stream's first sequence: one past the old
	// stream's last, so that no run record mistakes a new input for one
	// it already applied.
	FirstSeq uint64
}

// MigrateInputStream replaces an input stream that Provision refuses
// (ErrUnsafeInputStream) with a safe one, then provisions everything. Stop
// every dispatcher gracefully first: it refuses while inputs are delivered
// and not acknowledged. It moves the pending timer schedules to the timer stream
// and the inputs no dispatcher consumed yet to the new input stream (they
// get the time of the migration as their stream time); the history of
// consumed inputs is dropped with the old stream, so replay and history
// of earlier runs no longer find it (back it up first if you need it).
// The new stream's sequences continue the old ones. The old stream is
// deleted only after everything to carry over is read; if a later step
// fails, the error says what was not yet carried over. On a stream that
// needs no migration it only provisions.
func MigrateInputStream(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts ProvisionOptions) (Migration, error) {
	if err := checkNames(names); err != nil {
		return Migration{}, err
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return Migration{}, err
	}
	var m Migration
	old, err := bindStream(ctx, js, names.InputStream(), opts.RetryFor)
	if err != nil {
		return m, err
	}
	if old == nil || !old.CachedInfo().Config.AllowMsgSchedules {
		return m, Provision(ctx, js, names, opts)
	}
	inputs, err := unconsumed(ctx, js, old, names)
	if err != nil {
		return m, err
	}
	schedules, err := readStream(ctx, js, names.InputStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names.ScheduleAll()}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
	}, -1)
	if err != nil {
		return m, fmt.Errorf("provision: migrate: read the timer schedules of %q: %w", names.InputStream(), err)
	}
	info, err := kvstore.LeaderInfo(ctx, old)
	if err != nil {
		return m, fmt.Errorf("provision: migrate: %w", err)
	}
	m.FirstSeq, m.Dropped = info.State.LastSeq+1, info.State.Msgs-uint64(len(inputs)+len(schedules))
	if err := js.DeleteStream(ctx, names.InputStream()); err != nil {
		return m, fmt.Errorf("provision: migrate: delete %q: %w", names.InputStream(), err)
	}
	lost := func(err error) error {
		return fmt.Errorf("provision: migrate: %w (the old %q is deleted; not yet carried over: %d of %d inputs, %d of %d schedules)",
			err, names.InputStream(), len(inputs)-m.Inputs, len(inputs), len(schedules)-m.Schedules, len(schedules))
	}
	cfg := InputStreamConfig(names, opts)
	cfg.FirstSeq = m.FirstSeq
	if err := ensure(ctx, opts.RetryFor, func(ctx context.Context) error { return createAfterDelete(ctx, js, cfg) }); err != nil {
		return m, lost(err)
	}
	if err := Provision(ctx, js, names, opts); err != nil {
		return m, lost(err)
	}
	for _, in := range inputs {
		if _, err := js.PublishMsg(ctx, carried(in, nil)); err != nil {
			return m, lost(err)
		}
		m.Inputs++
	}
	for _, sched := range schedules {
		if _, err := js.PublishMsg(ctx, carried(sched, retarget(names, sched.Header))); err != nil {
			return m, lost(err)
		}
		m.Schedules++
	}
	return m, nil
}

// errStoreCreate is the server's "error creating store for stream".
const errStoreCreate jetstream.ErrorCode = 10049

// createAfterDelete creates the stream that replaces a deleted one. The
// server removes a deleted stream's directories in a goroutine; when it
// was the account's only stream that removal can take the parent
// directory away under the create (10049, "no such file or directory"),
// so that refusal is retried, not reported.
func createAfterDelete(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	_, err := js.CreateStream(ctx, cfg)
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == errStoreCreate {
		return fmt.Errorf("%w: %w", err, errAgain)
	}
	return err
}

// unconsumed reads the inputs after the dispatchers' acknowledged floor.
func unconsumed(ctx context.Context, js jetstream.JetStream, old jetstream.Stream, names subjects.Names) ([]*nats.Msg, error) {
	start := uint64(1)
	c, err := old.Consumer(ctx, names.DispatcherConsumer())
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("provision: migrate: read consumer %q: %w", names.DispatcherConsumer(), err)
	default:
		ci := c.CachedInfo()
		if ci.NumAckPending > 0 || ci.NumWaiting > 0 {
			// An input delivered and not acknowledged may be applied
			// already; under a new sequence it would apply twice.
			return nil, fmt.Errorf("provision: migrate: dispatchers still consume %q (%d inputs delivered and not acknowledged, %d pulls waiting): "+
				"stop every dispatcher gracefully and try again (after a crash, start one dispatcher and stop it, so that it acknowledges what it handled)",
				names.InputStream(), ci.NumAckPending, ci.NumWaiting)
		}
		start = ci.AckFloor.Stream + 1
	}
	msgs, err := readStream(ctx, js, names.InputStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names.InputAll()}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
	}, MaxMigratedInputs)
	if err != nil {
		return nil, fmt.Errorf("provision: migrate: read the unconsumed inputs of %q: %w", names.InputStream(), err)
	}
	return msgs, nil
}

// readStream reads every message an ordered consumer of cfg has pending
// when it starts, refusing more than limit (-1: no limit).
func readStream(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig, limit int) ([]*nats.Msg, error) {
	c, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, err
	}
	n := int(info.NumPending)
	if limit >= 0 && n > limit {
		return nil, fmt.Errorf("%d messages, more than the %d carried over at most: start the dispatchers to consume them first", n, limit)
	}
	out := make([]*nats.Msg, 0, n)
	for len(out) < n {
		batch, err := c.Fetch(min(n-len(out), 256), jetstream.FetchContext(ctx))
		if err != nil {
			return nil, err
		}
		for m := range batch.Messages() {
			out = append(out, &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// carried is m to publish again: without the headers the server set or
// acted on (Nats-*), plus extra.
func carried(m *nats.Msg, extra nats.Header) *nats.Msg {
	out := nats.NewMsg(m.Subject)
	out.Data = m.Data
	for k, vs := range m.Header {
		if !strings.HasPrefix(k, "Nats-") {
			out.Header[k] = vs
		}
	}
	for k, vs := range extra {
		out.Header[k] = vs
	}
	return out
}

// retarget makes the scheduling headers of an old schedule fire through
// the timer stream.
func retarget(names subjects.Names, h nats.Header) nats.Header {
	out := nats.Header{}
	for _, k := range []string{wire.HeaderSchedule, wire.HeaderScheduleTimeZone} {
		if v := h.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	target := h.Get(wire.HeaderScheduleTarget)
	if runID, kind, _, err := names.ParseInput(target); err == nil && kind == subjects.KindTimer {
		target = names.Fired(runID)
	}
	out.Set(wire.HeaderScheduleTarget, target)
	out.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
	return out
}
