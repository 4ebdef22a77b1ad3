package step

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/token"
	"github.com/jetflow/jetflow/wire"
)

// Render turns the reducer's effects into the messages that carry them
// out, in effect order, and returns the last status they announce (nil if
// none). It fails only on an effect no message can express, which is a
// bug in the workflow or the reducer. tokens signs each invocation's
// token.
func Render(names subjects.Names, tokens *token.Signer, runID string, st *run.State, effects []run.Effect, now float64) ([]runrecord.Outgoing, *wire.Status, error) {
	out := make([]runrecord.Outgoing, 0, len(effects))
	var status *wire.Status
	for _, e := range effects {
		if e.ID == "" {
			return nil, nil, fmt.Errorf("effect without an id")
		}
		// Effect ids are stable within a run; the run id makes them unique
		// in the streams they de-duplicate.
		msgID := runID + "/" + e.ID
		var o runrecord.Outgoing
		var err error
		switch {
		case e.Invoke != nil:
			o, err = renderInvoke(names, tokens, runID, msgID, e.Invoke)
		case e.Arm != nil:
			o, err = renderTimer(names, runID, msgID, e.Arm)
		case e.Disarm != nil:
			o = renderDisarm(names, runID, msgID, e.Disarm)
		case e.Settled != nil:
			status, err = statusFrom(runID, st, e.Settled, now)
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

func renderInvoke(names subjects.Names, tokens *token.Signer, runID, msgID string, inv *run.Invoke) (runrecord.Outgoing, error) {
	if tokens == nil {
		return runrecord.Outgoing{}, errors.New("no token signer (Config.Tokens is set by Start)")
	}
	if err := subjects.CheckTask(inv.Task); err != nil {
		return runrecord.Outgoing{}, err
	}
	if err := subjects.CheckVersion(inv.Version); err != nil {
		return runrecord.Outgoing{}, err
	}
	input, err := rawJSON(inv.Input)
	if err != nil {
		return runrecord.Outgoing{}, fmt.Errorf("task input: %w", err)
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
			return runrecord.Outgoing{}, fmt.Errorf("task with: %w", err)
		}
	}
	data, err := encodeInvocation(&body)
	if err != nil {
		return runrecord.Outgoing{}, err
	}
	o := runrecord.Outgoing{
		ID: msgID, Kind: runrecord.OutInvoke, Subject: names.Task(inv.Task, inv.Version), Data: data,
		Header: map[string]string{wire.HeaderRunID: runID, wire.HeaderActivation: inv.Activation},
	}
	if inv.Deadline > 0 {
		o.Header[wire.HeaderDeadline] = strconv.FormatFloat(inv.Deadline, 'f', -1, 64)
	}
	return o, nil
}

func renderTimer(names subjects.Names, runID, msgID string, arm *run.ArmTimer) (runrecord.Outgoing, error) {
	if arm.ID == "" {
		return runrecord.Outgoing{}, fmt.Errorf("timer without an id")
	}
	data, err := json.Marshal(wire.Timer{Timer: arm.ID, Deadline: arm.Deadline})
	if err != nil {
		return runrecord.Outgoing{}, err
	}
	due := time.UnixMilli(int64(arm.Deadline)).UTC()
	return runrecord.Outgoing{
		ID: msgID, Kind: runrecord.OutTimer, Subject: names.Schedule(runID, timerToken(arm.ID)), Data: data,
		Header: map[string]string{
			// nats.go's WithScheduleAt drops sub-second precision; RFC 3339
			// with nanoseconds is accepted by the server.
			wire.HeaderSchedule: "@at " + due.Format(time.RFC3339Nano),
			// The target must be in the schedule's own stream, the timer
			// stream; the input stream copies it onto names.Timer(runID).
			wire.HeaderScheduleTarget: names.Fired(runID),
			wire.HeaderScheduleTTL:    wire.FiredTimerTTLValue,
			wire.HeaderRunID:          runID,
			wire.HeaderTimer:          arm.ID,
			wire.HeaderDeadline:       strconv.FormatFloat(arm.Deadline, 'f', -1, 64),
		},
	}, nil
}

// renderDisarm drops a pending schedule without an API request: a
// roll-up on its subject replaces it by a marker the stream deletes a
// second later, and a marker never fires.
func renderDisarm(names subjects.Names, runID, msgID string, d *run.DisarmTimer) runrecord.Outgoing {
	return runrecord.Outgoing{
		ID: msgID, Kind: runrecord.OutDisarm, Subject: names.Schedule(runID, timerToken(d.ID)), Data: json.RawMessage(`{}`),
		Header: map[string]string{
			wire.HeaderRollup: "sub",
			wire.HeaderTTL:    "1",
			wire.HeaderRunID:  runID,
			wire.HeaderTimer:  d.ID,
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

func statusMessage(names subjects.Names, msgID string, ws *wire.Status) (runrecord.Outgoing, error) {
	data, err := json.Marshal(ws)
	if err != nil {
		return runrecord.Outgoing{}, err
	}
	return runrecord.Outgoing{
		ID: msgID, Kind: runrecord.OutStatus, Subject: names.Status(ws.Run), Data: data,
		Header: map[string]string{wire.HeaderRunID: ws.Run},
	}, nil
}

// rawJSON writes a task's input and with and a run's result as the
// reference's task handler and caller see them: members in JavaScript's
// own-key order (conformance/golden/order checks it byte for byte).
func rawJSON(v any) (json.RawMessage, error) {
	s, err := value.JSText(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(s), nil
}

// armsTimer reports whether an outbox schedules a timer that settling
// must purge (the deadline timer is dropped by the settling step itself).
func armsTimer(out []runrecord.Outgoing) bool {
	for _, o := range out {
		if o.Kind == runrecord.OutTimer && o.Header[wire.HeaderTimer] != run.DeadlineTimer {
			return true
		}
	}
	return false
}

// Msg is the NATS message that carries o out.
func Msg(o runrecord.Outgoing) *nats.Msg {
	m := nats.NewMsg(o.Subject)
	m.Data = o.Data
	for k, v := range o.Header {
		m.Header.Set(k, v)
	}
	if o.Kind != runrecord.OutStatus {
		m.Header.Set(wire.HeaderMsgID, o.ID)
	}
	return m
}
