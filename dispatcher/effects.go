package dispatcher

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// Scheduler headers (ADR-51), set on a timer's schedule message.
const (
	headerSchedule       = "Nats-Schedule"
	headerScheduleTarget = "Nats-Schedule-Target"
	headerScheduleTTL    = "Nats-Schedule-TTL"
	headerRollup         = "Nats-Rollup"
	headerTTL            = "Nats-TTL"
)

// firedTTL is the Nats-Schedule-TTL of every schedule, in seconds: how
// long the timer stream keeps the fired timer for the input stream.
var firedTTL = strconv.FormatInt(int64(kvstore.FiredTimerTTL/time.Second), 10)

// render turns the reducer's effects into the messages that carry them
// out, in effect order, and returns the last status they announce (nil if
// none). It fails only on an effect no message can express, which is a
// bug in the workflow or the reducer. tokens signs each invocation's
// token.
func render(names subjects.Names, tokens *token.Signer, runID string, st *run.State, effects []run.Effect, now float64) ([]Outgoing, *wire.Status, error) {
	out := make([]Outgoing, 0, len(effects))
	var status *wire.Status
	for _, e := range effects {
		if e.ID == "" {
			return nil, nil, fmt.Errorf("effect without an id")
		}
		// Effect ids are stable within a run; the run id makes them unique
		// in the streams they de-duplicate.
		msgID := runID + "/" + e.ID
		var o Outgoing
		var err error
		switch {
		case e.Invoke != nil:
			o, err = renderInvoke(names, tokens, runID, msgID, e.Invoke)
		case e.Arm != nil:
			o, err = renderTimer(names, runID, msgID, e.Arm)
		case e.Disarm != nil:
			o = renderDisarm(names, runID, msgID, e.Disarm)
		case e.Settled != nil:
			status, err = renderStatus(runID, st, e.Settled, now)
			if err == nil {
				o, err = statusMessage(names, msgID, status)
			}
		default:
			err = fmt.Errorf("effect %q sets no field", e.ID)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("effect %q: %w", e.ID, err)
		}
		out = append(out, o)
	}
	return out, status, nil
}

func renderInvoke(names subjects.Names, tokens *token.Signer, runID, msgID string, inv *run.Invoke) (Outgoing, error) {
	if tokens == nil {
		return Outgoing{}, errors.New("no token signer (Config.Tokens is set by Start)")
	}
	if err := subjects.CheckTask(inv.Task); err != nil {
		return Outgoing{}, err
	}
	if err := subjects.CheckVersion(inv.Version); err != nil {
		return Outgoing{}, err
	}
	input, err := rawJSON(inv.Input)
	if err != nil {
		return Outgoing{}, fmt.Errorf("task input: %w", err)
	}
	body := wire.Invocation{
		Run: runID, Activation: inv.Activation, State: inv.State, Node: inv.Node,
		Task: inv.Task, Version: inv.Version, Attempt: inv.Attempt,
		// Deterministic, so a re-published invocation carries the same
		// token; only a holder of the secret can make one.
		Input: input, Token: tokens.Sign(runID, inv.Activation, inv.Node, inv.Attempt), Reply: names.Result(runID),
		Deadline: inv.Deadline,
	}
	if inv.HasWith {
		if body.With, err = rawJSON(inv.With); err != nil {
			return Outgoing{}, fmt.Errorf("task with: %w", err)
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return Outgoing{}, err
	}
	o := Outgoing{
		ID: msgID, Kind: OutInvoke, Subject: names.Task(inv.Task, inv.Version), Data: data,
		Header: map[string]string{wire.HeaderRunID: runID, wire.HeaderActivation: inv.Activation},
	}
	if inv.Deadline > 0 {
		o.Header[wire.HeaderDeadline] = strconv.FormatFloat(inv.Deadline, 'f', -1, 64)
	}
	return o, nil
}

func renderTimer(names subjects.Names, runID, msgID string, arm *run.ArmTimer) (Outgoing, error) {
	if arm.ID == "" {
		return Outgoing{}, fmt.Errorf("timer without an id")
	}
	data, err := json.Marshal(wire.Timer{Timer: arm.ID, Deadline: arm.Deadline})
	if err != nil {
		return Outgoing{}, err
	}
	due := time.UnixMilli(int64(arm.Deadline)).UTC()
	return Outgoing{
		ID: msgID, Kind: OutTimer, Subject: names.Schedule(runID, timerToken(arm.ID)), Data: data,
		Header: map[string]string{
			// nats.go's WithScheduleAt drops sub-second precision; RFC 3339
			// with nanoseconds is accepted by the server.
			headerSchedule: "@at " + due.Format(time.RFC3339Nano),
			// The target must be in the schedule's own stream, the timer
			// stream; the input stream copies it onto names.Timer(runID).
			headerScheduleTarget: names.Fired(runID),
			headerScheduleTTL:    firedTTL,
			wire.HeaderRunID:     runID,
			wire.HeaderTimer:     arm.ID,
			wire.HeaderDeadline:  strconv.FormatFloat(arm.Deadline, 'f', -1, 64),
		},
	}, nil
}

// renderDisarm drops a pending schedule without an API request: a
// roll-up on its subject replaces it by a marker the stream deletes a
// second later, and a marker never fires.
func renderDisarm(names subjects.Names, runID, msgID string, d *run.DisarmTimer) Outgoing {
	return Outgoing{
		ID: msgID, Kind: OutDisarm, Subject: names.Schedule(runID, timerToken(d.ID)), Data: json.RawMessage(`{}`),
		Header: map[string]string{
			headerRollup:     "sub",
			headerTTL:        "1",
			wire.HeaderRunID: runID,
			wire.HeaderTimer: d.ID,
		},
	}
}

// timerToken makes a timer id one subject token: ids that already are one
// are kept (readable), others are base64url-encoded behind a '~', which no
// plain token contains, so distinct ids never share a schedule subject.
func timerToken(id string) string {
	if subjects.CheckRunID(id) == nil {
		return id
	}
	return "~" + base64.RawURLEncoding.EncodeToString([]byte(id))
}

func renderStatus(runID string, st *run.State, s *run.Settled, now float64) (*wire.Status, error) {
	ws := &wire.Status{
		Run: runID, Workflow: st.Workflow, Revision: st.Revision,
		Status: string(s.Status), State: s.State, Time: now,
	}
	if s.Status == run.StatusDone || s.Result != nil {
		r, err := rawJSON(s.Result)
		if err != nil {
			return nil, fmt.Errorf("run result: %w", err)
		}
		ws.Result = r
	}
	if s.Error != nil {
		ws.Error = &wire.RunError{Code: s.Error.Code, Path: s.Error.Path, Message: s.Error.Message}
	}
	return ws, nil
}

func statusMessage(names subjects.Names, msgID string, ws *wire.Status) (Outgoing, error) {
	data, err := json.Marshal(ws)
	if err != nil {
		return Outgoing{}, err
	}
	return Outgoing{
		ID: msgID, Kind: OutStatus, Subject: names.Status(ws.Run), Data: data,
		Header: map[string]string{wire.HeaderRunID: ws.Run},
	}, nil
}

func rawJSON(v any) (json.RawMessage, error) {
	s, err := value.Canonical(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(s), nil
}

func (o Outgoing) msg() *nats.Msg {
	m := nats.NewMsg(o.Subject)
	m.Data = o.Data
	for k, v := range o.Header {
		m.Header.Set(k, v)
	}
	if o.Kind != OutStatus {
		m.Header.Set(wire.HeaderMsgID, o.ID)
	}
	return m
}

// legacyTimer rewrites a schedule that a record saved before the timer
// stream existed still owes: its target was the input stream's timer
// subject, which the timer stream refuses.
func legacyTimer(names subjects.Names, m *nats.Msg) {
	target := m.Header.Get(headerScheduleTarget)
	if runID, kind, _, err := names.ParseInput(target); err == nil && kind == subjects.KindTimer {
		m.Header.Set(headerScheduleTarget, names.Fired(runID))
		m.Header.Set(headerScheduleTTL, firedTTL)
	}
}

// publisher carries out rendered effects.
type publisher struct {
	js    jetstream.JetStream
	nc    *nats.Conn
	names subjects.Names
	// taskTTL says the task stream takes per-message TTLs: an invocation
	// then expires a little after its deadline, so that one nobody
	// acknowledged (NATS stops redelivering it after max_deliver) does
	// not stay in the work queue for good.
	taskTTL bool
	now     func() time.Time
}

// invocationTTLMargin is how long past its deadline an invocation stays
// in the task stream: more than the Go SDK's allowance for clock skew.
const invocationTTLMargin = 5 * time.Second

// expire sets an invocation's Nats-TTL from its deadline header.
func (p publisher) expire(m *nats.Msg) {
	d, err := strconv.ParseFloat(m.Header.Get(wire.HeaderDeadline), 64)
	if err != nil || d <= 0 || !p.taskTTL {
		return
	}
	left := time.UnixMilli(int64(d)).Sub(p.now()) + invocationTTLMargin
	m.Header.Set(headerTTL, strconv.FormatInt(int64(max(time.Second, left).Round(time.Second)/time.Second), 10))
}

// publish sends every outgoing message: invocations and timer schedules
// (to the task and timer streams) through JetStream with Nats-Msg-Id (so a repeat within the stream's
// duplicate window stores nothing), status announcements on core NATS
// after them (the saved record is the truth; an announcement is a hint).
func (p publisher) publish(ctx context.Context, out []Outgoing) error {
	var js []*nats.Msg
	for _, o := range out {
		if o.Kind != OutStatus {
			m := o.msg()
			switch o.Kind {
			case OutTimer:
				legacyTimer(p.names, m)
			case OutInvoke:
				p.expire(m)
			}
			js = append(js, m)
		}
	}
	switch len(js) {
	case 0:
	case 1:
		if _, err := p.js.PublishMsg(ctx, js[0]); err != nil {
			return fmt.Errorf("publish %s: %w", js[0].Subject, err)
		}
	default:
		futures := make([]jetstream.PubAckFuture, 0, len(js))
		for _, m := range js {
			f, err := p.js.PublishMsgAsync(m)
			if err != nil {
				return fmt.Errorf("publish %s: %w", m.Subject, err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("publish %s: %w", f.Msg().Subject, err)
			case <-ctx.Done():
				return fmt.Errorf("publish %s: %w", f.Msg().Subject, context.Cause(ctx))
			}
		}
	}
	for _, o := range out {
		if o.Kind == OutStatus {
			if err := p.nc.PublishMsg(o.msg()); err != nil {
				return fmt.Errorf("announce %s: %w", o.Subject, err)
			}
		}
	}
	return nil
}
