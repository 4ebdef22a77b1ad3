package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// errPostponed: a deadline fire found attempts of a paused task version
// due. The run was sent a postpone input for them instead, and the fire
// is handed back; applied after the postpone, it is stale.
var errPostponed = errors.New("deadline fire held back: attempts of a paused task version were postponed")

// postponePaused checks a deadline fire before it is applied: the due
// attempts of a task version an operator paused (provision.PauseTask)
// must not time out for it. For each such version it publishes a
// postpone input to the run, with an id that makes a redelivered fire's
// repeat a duplicate, and returns errPostponed. A pause it cannot read is
// logged and taken as none: the attempt then times out as usual.
func (d *Dispatcher) postponePaused(ctx context.Context, in *step.Input, cur cached, now float64, log *slog.Logger) (cached, error) {
	if !in.DeadlineFire() || cur.rec == nil {
		return cur, nil
	}
	if cur.st == nil {
		st, err := step.DecodeState(cur.rec)
		if err != nil {
			return cur, nil // Step reports it
		}
		cur.st = st
	}
	def, err := d.loader.Load(ctx, cur.st.Workflow, cur.st.Revision)
	if err != nil {
		return cur, nil // Step reports it
	}
	postponed := false
	for _, tv := range step.DueAt(def, cur.st, in, now) {
		paused, err := d.taskPaused(ctx, tv.Task, tv.Version)
		if err != nil {
			log.Warn("dispatcher: cannot tell whether a task is paused; its attempts time out as usual",
				slog.String("task", tv.Task), slog.String("version", tv.Version), slog.Any("error", err))
			continue
		}
		if !paused {
			continue
		}
		body, err := json.Marshal(wire.Postpone{Task: tv.Task, Version: tv.Version, Deadline: cur.st.Deadline})
		if err != nil {
			return cur, err
		}
		m := nats.NewMsg(d.cfg.Names.Postpone(in.RunID))
		m.Data = body
		m.Header.Set(wire.HeaderMsgID, subjects.KindPostpone+"/"+in.RunID+"/"+strconv.FormatFloat(cur.st.Deadline, 'f', -1, 64)+
			"/"+tv.Task+"/"+subjects.VersionToken(tv.Version))
		pctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
		_, err = d.js.PublishMsg(pctx, m)
		cancel()
		if err != nil {
			return cur, err
		}
		postponed = true
		log.Info("dispatcher: attempts of a paused task postponed", slog.String("task", tv.Task), slog.String("version", tv.Version))
	}
	if postponed {
		return cur, errPostponed
	}
	return cur, nil
}

func (d *Dispatcher) taskPaused(ctx context.Context, task, version string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	paused, _, err := provision.TaskPaused(ctx, d.js, d.cfg.Names, task, version)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	return paused, err
}

// closeTask carries out a result's request to close its task version
// (wire.TaskError.CloseTask): it pauses the version's consumer until its
// retryAfterMs from now, unless a pause already lasts longer (an
// operator's, or another worker's). cur is the run as it was before the
// result applied, which says what task the result answers. The retry's
// own delay is in the record already; a pause that fails is logged, and
// the task stays open.
func (d *Dispatcher) closeTask(ctx context.Context, in *step.Input, cur cached, log *slog.Logger) {
	if cur.st == nil {
		return
	}
	def, err := d.loader.Load(ctx, cur.st.Workflow, cur.st.Revision)
	if err != nil {
		return
	}
	tv, wait, ok := step.Closes(def, cur.st, in)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	until := d.cfg.Clock.Now().Add(wait)
	paused, already, err := provision.TaskPaused(ctx, d.js, d.cfg.Names, tv.Task, tv.Version)
	if err == nil && paused && !already.Before(until) {
		return
	}
	if err == nil {
		_, err = provision.PauseTask(ctx, d.js, d.cfg.Names, tv.Task, tv.Version, until)
	}
	if err != nil {
		log.Warn("dispatcher: a worker asked to close a task version; it stays open", slog.String("task", tv.Task),
			slog.String("version", tv.Version), slog.Duration("for", wait), slog.Any("error", err))
		return
	}
	log.Info("dispatcher: task version closed on a worker's retry-after", slog.String("task", tv.Task),
		slog.String("version", tv.Version), slog.Time("until", until))
}
