package step

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/value"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrMalformed is wrapped by every refusal of an input that can never
// apply, whatever the run's state: it is terminated, not retried.
var ErrMalformed = errors.New("malformed input")

// bodyLimits bound every JSON body a dispatcher decodes.
var bodyLimits = value.Limits{MaxBytes: 8 << 20, MaxDepth: 256}

// Input is a parsed run input.
type Input struct {
	// RunID and Kind come from the subject (subjects.Kind*).
	RunID string
	Kind  string
	// Start is the start body (kind start only): which workflow to run.
	Start *wire.Start
	// Expire is the removal body (kind expire only): which settlement
	// the removal was scheduled for.
	Expire *wire.Expire
	msg    run.Message
	// token is the token a result echoes (kind result only).
	token string
	// closeTask says a result's error asks to close its task version for
	// its retryAfterMs (Closes).
	closeTask bool
	// redriveTo is the revision a redrive moves its run to, "" for none.
	redriveTo string
	// resetTo is the input sequence a reset takes its run back to.
	resetTo uint64
	// limits bound the JSON of its body.
	limits value.Limits
	// startEvent is the event a start carries (startevent.go).
	startEvent *run.Event
	// migrate is the migration's body (kind migrate only).
	migrate *wire.Migrate
	// fired is the schedule subject a timer fire came from (the server's
	// wire.HeaderScheduler), "" for other inputs: the instance its step
	// may drop knowing that it is gone.
	fired string
	// Held says the start came back from the timer stream, held there
	// for this reason (wire.HeaderHeld); HeldRound is how often a queued
	// start looked before.
	Held      string
	HeldRound int
	// refused is why an input addressed to a run cannot apply (it wraps
	// ErrMalformed); msg is then empty. A run that exists records the
	// refusal; without one the input is terminated.
	refused error
}

// Parse reads one input message (its stream metadata aside). When it is
// malformed the error wraps ErrMalformed, and the input is returned too
// if it is addressed to a run (a subject naming a run and a kind other
// than start): a run that exists records the refusal, and without one it
// is terminated. It never panics on hostile data.
func Parse(s Settings, subject string, header nats.Header, data []byte) (*Input, error) {
	var in *Input
	var err error
	if len(data) > s.MaxInputBytes && header.Get(wire.HeaderPayload) == "" {
		err = malformed("input of %d bytes is larger than the dispatcher's limit of %d bytes (Config.MaxInputBytes)", len(data), s.MaxInputBytes)
	} else {
		in, err = parseInput(s.Names, subject, header, data)
	}
	if err != nil {
		return addressed(s.Names, subject, err), err
	}
	return in, nil
}

// Refuse returns the input that carries err, why an input's body could
// not be read (a bad payload reference, docs/PROTOCOL.md 2.4), to its run,
// as Parse does for a malformed input: nil when the subject names no run
// or names a start. The error wraps ErrMalformed and err.
func Refuse(s Settings, subject string, err error) (*Input, error) {
	err = fmt.Errorf("%w: %w", ErrMalformed, err)
	return addressed(s.Names, subject, err), err
}

// Check returns why a dispatcher would terminate an input as malformed,
// or nil if it parses (whatever its size).
func Check(names subjects.Names, subject string, header nats.Header, data []byte) error {
	_, err := parseInput(names, subject, header, data)
	return err
}

// workflow is the workflow and revision a start names.
func (in *Input) workflow() (name, revision string) {
	if in.Start == nil {
		return "", ""
	}
	return in.Start.Workflow, in.Start.Revision
}

// addressed returns the input that carries a malformed message's refusal
// to its run, or nil when the subject names no run (or names a start,
// which no existing run records).
func addressed(names subjects.Names, subject string, err error) *Input {
	runID, kind, _, perr := names.ParseInput(subject)
	if perr != nil || subjects.CheckRunID(runID) != nil || kind == subjects.KindStart {
		return nil
	}
	switch kind {
	case subjects.KindEvent, subjects.KindResult, subjects.KindTimer, subjects.KindCancel,
		subjects.KindPause, subjects.KindResume, subjects.KindTerminate, subjects.KindPostpone, subjects.KindRedrive, subjects.KindReset, subjects.KindExpire, subjects.KindMigrate:
		return &Input{RunID: runID, Kind: kind, msg: run.Message{RunID: runID}, refused: err}
	}
	return nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// parseInput reads one input message. It never panics on hostile data and
// every error it returns wraps ErrMalformed.
func parseInput(names subjects.Names, subject string, header nats.Header, data []byte) (*Input, error) {
	runID, kind, eventType, err := names.ParseInput(subject)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	in := &Input{RunID: runID, Kind: kind, msg: run.Message{RunID: runID}, limits: bodyLimits}
	if header.Get(wire.HeaderPayload) != "" {
		// A body that came by reference was bounded by its reader
		// (payload.Config.MaxBytes).
		in.limits.MaxBytes = max(bodyLimits.MaxBytes, len(data))
	}
	switch kind {
	case subjects.KindStart:
		err = in.parseStart(data)
	case subjects.KindEvent:
		err = in.parseEvent(eventType, data)
	case subjects.KindResult:
		err = in.parseResult(data)
	case subjects.KindTimer:
		if why := header.Get(wire.HeaderHeld); why != "" {
			// A held start (debounced, or queued behind a singleton)
			// comes back through the timers' source (startctl).
			in.Kind, in.Held = subjects.KindStart, why
			in.HeldRound, _ = strconv.Atoi(header.Get(wire.HeaderHeldRound))
			err = in.parseStart(data)
		} else if header.Get(wire.HeaderExpire) != "" {
			// A removal comes in through the timers' source.
			in.Kind = subjects.KindExpire
			err = in.parseExpire(data)
		} else {
			err = in.parseTimer(header, data)
		}
	case subjects.KindCancel:
		err = in.parseCancel(data)
	case subjects.KindPause, subjects.KindResume, subjects.KindTerminate:
		err = in.parseOperation(kind, data)
	case subjects.KindPostpone:
		err = in.parsePostpone(data)
	case subjects.KindRedrive:
		err = in.parseRedrive(data)
	case subjects.KindReset:
		err = in.parseReset(data)
	case subjects.KindMigrate:
		err = in.parseMigrate(data)
	case subjects.KindExpire:
		err = in.parseExpire(data)
	default:
		err = malformed("unknown input kind %q", kind)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

func (in *Input) parseStart(data []byte) error {
	var body wire.Start
	if err := strictJSONIn(data, &body, in.limits); err != nil {
		return malformed("start body: %v", err)
	}
	if err := subjects.CheckWorkflowName(body.Workflow); err != nil {
		return fmt.Errorf("%w: start body: %w", ErrMalformed, err)
	}
	if err := body.CheckControls(); err != nil {
		return fmt.Errorf("%w: start body: %w", ErrMalformed, err)
	}
	v, err := optionalValueIn(body.Input, in.limits)
	if err != nil {
		return malformed("start input: %v", err)
	}
	in.Start = &body
	in.msg.Kind, in.msg.Input = run.KindStart, v
	if e := body.Event; e != nil {
		if err := subjects.CheckEventType(e.Type); err != nil {
			return fmt.Errorf("%w: start body: event type: %w", ErrMalformed, err)
		}
		p, err := optionalValueIn(e.Payload, in.limits)
		if err != nil {
			return malformed("start event payload: %v", err)
		}
		in.startEvent = &run.Event{Type: e.Type, Payload: p, HasPayload: len(e.Payload) > 0}
	}
	return nil
}

func (in *Input) parseEvent(eventType string, data []byte) error {
	if err := subjects.CheckEventType(eventType); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	v, err := optionalValueIn(data, in.limits)
	if err != nil {
		return malformed("event payload: %v", err)
	}
	in.msg.Kind = run.KindEvent
	// An empty body is an event without a payload (not a null payload).
	in.msg.Event = &run.Event{Type: eventType, Payload: v, HasPayload: len(bytes.TrimSpace(data)) > 0}
	return nil
}

func (in *Input) parseResult(data []byte) error {
	var body wire.Result
	if err := strictJSONIn(data, &body, in.limits); err != nil {
		return malformed("result body: %v", err)
	}
	if body.Activation == "" {
		return malformed("result body: activation is empty")
	}
	// "output": null is a null output; an absent output is not one. A
	// worker that lost its return value must not turn it into a success.
	hasOutput := len(body.Output) > 0
	switch {
	case hasOutput && body.Error != nil:
		return malformed("result body: both output and error are set (exactly one of them, docs/PROTOCOL.md 5.6)")
	case !hasOutput && body.Error == nil:
		return malformed("result body: neither output nor error is set (a task that returns nothing sends \"output\": null, docs/PROTOCOL.md 5.6)")
	case body.Error != nil && strings.TrimSpace(body.Error.Message) == "":
		return malformed("result body: error.message is empty (the workflow sees it; docs/PROTOCOL.md 5.6)")
	case body.Error != nil && (body.Error.RetryAfterMs < 0 || math.IsNaN(body.Error.RetryAfterMs)):
		return malformed("result body: error.retryAfterMs is %v; it is a delay in milliseconds, 0 or more (docs/PROTOCOL.md 5.6)", body.Error.RetryAfterMs)
	case body.Error != nil && body.Error.CloseTask && body.Error.RetryAfterMs == 0:
		return malformed("result body: error.closeTask needs error.retryAfterMs, how long the task is closed (docs/PROTOCOL.md 5.6)")
	}
	res := &run.TaskResult{Activation: body.Activation, Node: body.Node, Attempt: body.Attempt}
	if body.Error != nil {
		res.Error = &run.TaskError{Message: body.Error.Message, Code: body.Error.Code, NonRetryable: body.Error.NonRetryable, RetryAfterMs: body.Error.RetryAfterMs}
	} else {
		// read as the reference's handler would hand it over: objects in
		// the order the worker wrote their members (JSON.parse order)
		var v any
		var err error
		if len(bytes.TrimSpace(body.Output)) > 0 {
			v, err = value.DecodeOrdered(body.Output, in.limits)
		}
		if err != nil {
			return malformed("result output: %v", err)
		}
		res.Output = v
	}
	in.msg.Kind, in.msg.Result, in.token = run.KindResult, res, body.Token
	in.closeTask = body.Error != nil && body.Error.CloseTask
	return nil
}

func (in *Input) parseTimer(header nats.Header, data []byte) error {
	var body wire.Timer
	if len(bytes.TrimSpace(data)) > 0 {
		if err := strictJSON(data, &body); err != nil {
			return malformed("timer body: %v", err)
		}
	}
	// The scheduler copies our headers onto the fired message; they stand
	// in for a body some other tool may have dropped.
	if body.Timer == "" {
		body.Timer = header.Get(wire.HeaderTimer)
	}
	if body.Timer == "" {
		return malformed("timer fire names no timer")
	}
	if body.Deadline == 0 {
		if h := header.Get(wire.HeaderDeadline); h != "" {
			d, err := strconv.ParseFloat(h, 64)
			if err != nil {
				return malformed("timer deadline header %q: %v", h, err)
			}
			body.Deadline = d
		}
	}
	in.msg.Kind = run.KindTimer
	in.msg.Timer = &run.TimerFire{ID: body.Timer, Deadline: body.Deadline}
	in.fired = header.Get(wire.HeaderScheduler)
	return nil
}

func (in *Input) parseCancel(data []byte) error {
	var body wire.Cancel
	if len(bytes.TrimSpace(data)) > 0 {
		if err := strictJSON(data, &body); err != nil {
			return malformed("cancel body: %v", err)
		}
	}
	in.msg.Kind, in.msg.Reason = run.KindCancel, body.Reason
	return nil
}

func (in *Input) parseRedrive(data []byte) error {
	var body wire.Redrive
	if len(bytes.TrimSpace(data)) > 0 {
		if err := strictJSON(data, &body); err != nil {
			return malformed("redrive body: %v", err)
		}
	}
	if len(body.Revision) > 256 || strings.ContainsAny(body.Revision, "\x00\r\n") {
		return malformed("redrive body: revision %q is not a revision name", body.Revision)
	}
	in.msg.Kind, in.msg.Reason, in.redriveTo = run.KindRedrive, body.Reason, body.Revision
	return nil
}

func (in *Input) parseExpire(data []byte) error {
	var body wire.Expire
	if err := strictJSON(data, &body); err != nil {
		return malformed("removal body: %v", err)
	}
	if body.Settled <= 0 || body.Retention < 0 || body.Status == "" {
		return malformed("removal body names no settlement (settled %v, status %q, retention %v)", body.Settled, body.Status, body.Retention)
	}
	in.Expire = &body
	return nil
}

// strictJSON decodes one JSON object into v within bodyLimits. (Nested
// values stay raw here and go through value.Decode, which bounds depth;
// encoding/json itself refuses nesting past 10000 without recursing
// further.)
func strictJSON(data []byte, v any) error { return strictJSONIn(data, v, bodyLimits) }

func strictJSONIn(data []byte, v any, limits value.Limits) error {
	if len(data) > limits.MaxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", value.ErrTooLarge, len(data), limits.MaxBytes)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("expected a JSON object")
	}
	return json.Unmarshal(data, v)
}

// optionalValue decodes a JSON value; absent or empty means null.
func optionalValueIn(raw []byte, limits value.Limits) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	return value.Decode(raw, limits)
}

// Refused is why an input addressed to a run cannot apply (it wraps
// ErrMalformed), or nil.
func (in *Input) Refused() error { return in.refused }
