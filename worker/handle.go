package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/clock"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/wire"
)

// publishPatience bounds how long a finished result is retried while the
// server refuses it; after that the invocation is handed back for
// redelivery.
const publishPatience = time.Minute

// handle processes one delivered invocation: parse, heartbeat, run the
// handler, publish the result, and only then acknowledge.
func (w *Worker) handle(rs *runState, r *registration, m jetstream.Msg, p *pace, log *slog.Logger) {
	var delivery, seq uint64
	if md, err := m.Metadata(); err == nil {
		delivery, seq = md.NumDelivered, md.Sequence.Stream
	}
	data, permanent, err := w.invocationBody(rs.work, m.Headers(), m.Data())
	if err != nil && !permanent {
		log.Warn("reading an invocation from the payload bucket failed; handed back", "subject", m.Subject(), "stream_seq", seq,
			"run_id", m.Headers().Get(wire.HeaderRunID), "error", err)
		w.handBack(m, log)
		return
	}
	if err != nil {
		// Its token is in the body: no result can answer it, and the
		// dispatchers fail the attempt at its deadline (TASK_TIMEOUT).
		log.Error("terminating an invocation whose payload reference is bad", "subject", m.Subject(), "stream_seq", seq,
			"run_id", m.Headers().Get(wire.HeaderRunID), "reason", err.Error())
		if err := m.TermWithReason(err.Error()); err != nil {
			log.Error("terminating an invocation failed", "subject", m.Subject(), "stream_seq", seq, "error", err)
		}
		return
	}
	wi, err := parseInvocation(data, w.cfg.Names, r.task, r.version)
	if err != nil {
		log.Error("terminating a malformed invocation", "subject", m.Subject(), "stream_seq", seq,
			"run_id", m.Headers().Get(wire.HeaderRunID), "reason", err.Error())
		if err := m.TermWithReason(err.Error()); err != nil {
			log.Error("terminating a malformed invocation failed", "subject", m.Subject(), "stream_seq", seq, "error", err)
		}
		return
	}
	log = log.With("run_id", wi.Run, "activation", wi.Activation, "node", wi.Node, "attempt", wi.Attempt)
	if delivery > 1 {
		log.Info("invocation redelivered", "delivery", delivery)
	}

	inv := invocationOf(wi, delivery)
	if !inv.Deadline.IsZero() && time.Now().After(inv.Deadline.Add(deadlineSkew)) {
		// The dispatchers have failed this attempt already (and perhaps
		// invoked the next): running it would only be refused.
		log.Warn("invocation past its deadline; not run", "deadline", inv.Deadline, "delivery", delivery)
		if err := m.TermWithReason("past its deadline"); err != nil {
			log.Error("terminating an invocation past its deadline failed", "error", err)
		}
		return
	}
	stopHeartbeat := w.keepAlive(rs.work, m, p, log)
	defer stopHeartbeat() // also stopped before the ack below

	ctx, cancel := context.WithCancel(rs.work)
	defer cancel()
	if !inv.Deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, inv.Deadline.Add(deadlineSkew))
		defer cancelDeadline()
	}
	ctx, span := w.startAttempt(ctx, m, wi, delivery)
	out, herr := Execute(ctx, r.handler, inv)
	if herr != nil && rs.work.Err() != nil {
		// The worker stopped under the handler: its error is most likely
		// the cancellation, not the task's. Let another worker run it.
		log.Info("worker stopped before the handler returned; invocation handed back", "error", herr)
		endAttempt(span, herr, "worker stopped")
		w.handBack(m, log)
		return
	}
	if herr != nil {
		var pe *PanicError
		if errors.As(herr, &pe) {
			log.Error("task handler panicked", "error", herr, "stack", string(pe.Stack))
		} else {
			log.Warn("task failed", "error", herr)
		}
	}

	body, msgID := w.result(wi, out, herr, log)
	err = w.publish(rs.work, ctx, wi, msgID, body)
	if tooLarge(err) {
		// The input stream caps its message size below the server's max
		// payload; no retry can fit this output.
		log.Error("task result exceeds the input stream's maximum message size", "bytes", len(body), "error", err)
		body = encodeResult(wi, nil, &wire.TaskError{
			Message:      fmt.Sprintf("task result of %d bytes exceeds the maximum message size of stream %q (store large data elsewhere and return a reference)", len(body), w.cfg.Names.InputStream()),
			NonRetryable: true,
		})
		err = w.publish(rs.work, ctx, wi, msgID, body)
	}
	if err != nil {
		log.Error("publishing the task result failed; invocation handed back", "reply", wi.Reply, "error", err)
		endAttempt(span, herr, "result not published")
		w.handBack(m, log)
		return
	}
	endAttempt(span, herr, "")
	stopHeartbeat()
	ctx, cancelAck := context.WithTimeout(context.WithoutCancel(rs.work), w.cfg.PublishTimeout)
	defer cancelAck()
	if err := m.DoubleAck(ctx); err != nil {
		// The result is out; a redelivery re-publishes it under the same
		// Nats-Msg-Id and the dispatcher ignores the duplicate.
		log.Warn("acknowledging the invocation failed", "error", err)
	}
}

// Execute runs h on inv as a worker does: a panic becomes a *PanicError,
// and the output is encoded as JSON (nil as null). An output that cannot
// be encoded is a non-retryable error. Package workertest uses it to run
// handlers without a server.
func Execute(ctx context.Context, h Handler, inv Invocation) (output json.RawMessage, err error) {
	out, err := call(ctx, h, inv)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, NonRetryable(fmt.Errorf("task output is not JSON: %w", err))
	}
	return b, nil
}

func call(ctx context.Context, h Handler, inv Invocation) (out any, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h(ctx, inv)
}

// result encodes the wire result of an invocation and its Nats-Msg-Id. An
// output too large for the server becomes a non-retryable task error.
func (w *Worker) result(wi *wire.Invocation, out json.RawMessage, herr error, log *slog.Logger) ([]byte, string) {
	msgID := ResultMsgID(wi.Token)
	if herr != nil {
		return encodeResult(wi, nil, WireError(herr)), msgID
	}
	body := encodeResult(wi, out, nil)
	if len(body) > w.threshold() {
		if _, err := w.payloadStore(context.Background()); err == nil {
			return body, msgID // by reference (publish)
		}
	}
	// Leave room for the headers.
	maxPayload := w.js.Conn().MaxPayload()
	if limit := maxPayload - int64(len(msgID)) - 256; int64(len(body)) > limit {
		log.Error("task output exceeds the server's max payload", "bytes", len(out), "limit", limit)
		body = encodeResult(wi, nil, &wire.TaskError{
			Message:      fmt.Sprintf("task output of %d bytes exceeds the NATS max payload of %d bytes (store large data elsewhere and return a reference)", len(out), maxPayload),
			NonRetryable: true,
		})
	}
	return body, msgID
}

// encodeResult encodes the result of wi with exactly one of out and te.
func encodeResult(wi *wire.Invocation, out json.RawMessage, te *wire.TaskError) []byte {
	res := wire.Result{Activation: wi.Activation, Node: wi.Node, Attempt: wi.Attempt, Token: wi.Token, Output: out, Error: te}
	body, err := json.Marshal(res)
	if err != nil { // out comes from json.Marshal, the rest are strings
		panic(fmt.Sprintf("worker: encoding a result: %v", err))
	}
	return body
}

func tooLarge(err error) bool {
	var ae *jetstream.APIError
	return errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
}

// ResultMsgID is the Nats-Msg-Id of the result of the invocation whose
// token is tok: "result/" and the hex SHA-256 of the token. A re-sent
// result has the same id, so the stream drops the copy; and since only the
// invocation's worker sees the token (an HMAC only dispatchers can make),
// nobody else can predict the id and publish under it first, which would
// make the stream drop the real result as a duplicate. The hash keeps the
// token itself out of the id, which other publishers can learn once it is
// stored (the server's refusal of Nats-Expected-Last-Msg-Id quotes it).
func ResultMsgID(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "result/" + hex.EncodeToString(sum[:])
}

// publish JetStream-publishes a result, retrying with backoff while the
// worker runs. After a hard stop it tries once more, so that a finished
// handler's work is not lost needlessly.
//
// When tracing, the result carries the attempt's span, the span of
// attempt (tracing.Inject).
//
// A body larger than Config.PayloadThreshold goes to the payload bucket
// first and travels by reference (docs/PROTOCOL.md 2.4).
func (w *Worker) publish(work, attempt context.Context, wi *wire.Invocation, msgID string, body []byte) error {
	msg := nats.NewMsg(wi.Reply)
	msg.Data = body
	if w.tracer != nil {
		tracing.Inject(attempt, msg.Header)
	}
	if len(body) > w.threshold() {
		if s, err := w.payloadStore(work); err == nil {
			put := func() error {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(work), w.cfg.PublishTimeout) // stretched for the size (payload.Store.Put)
				defer cancel()
				_, err := s.Send(ctx, msg, wi.Run, payload.KindResult)
				return err
			}
			b := newBackoff(50*time.Millisecond, 5*time.Second)
			b.MaxElapsedTime = publishPatience
			b.Clock = w.cfg.Clock
			if err := backoff.RetryNotifyWithTimer(put, backoff.WithContext(b, work), nil, &clock.RetryTimer{Clock: w.cfg.Clock}); err != nil {
				return err
			}
		}
	}
	b := newBackoff(50*time.Millisecond, 5*time.Second)
	b.MaxElapsedTime = publishPatience
	b.Clock = w.cfg.Clock // measures the patience
	op := func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(work), w.cfg.PublishTimeout)
		defer cancel()
		_, err := w.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(w.cfg.Names.InputStream()))
		if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrConnectionClosed) || tooLarge(err) {
			return backoff.Permanent(err)
		}
		return err
	}
	return backoff.RetryNotifyWithTimer(op, backoff.WithContext(b, work), nil, &clock.RetryTimer{Clock: w.cfg.Clock})
}

// handBack naks m for redelivery to another worker. The delay lets every
// pull request this worker abandoned expire on the server first (they all
// expire within PollWait), so the invocation cannot be redelivered into one
// of them and then wait a whole AckWait.
func (w *Worker) handBack(m jetstream.Msg, log *slog.Logger) {
	if err := m.NakWithDelay(w.cfg.PollWait); err != nil {
		log.Warn("handing the invocation back failed; it is redelivered after the consumer's AckWait", "error", err)
	}
}
