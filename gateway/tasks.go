package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// Lease is what a take lends a worker: everything needed to heartbeat and
// complete the invocation, so that any gateway can do either. It travels
// as one opaque string (base64url JSON); keep it secret as the invocation
// itself, since it carries the invocation's result token.
type Lease struct {
	Ack        string  `json:"a"`
	Task       string  `json:"t"`
	Version    string  `json:"v"`
	Run        string  `json:"r"`
	Activation string  `json:"c"`
	Node       string  `json:"n"`
	Attempt    int     `json:"at"`
	Token      string  `json:"k"`
	Deadline   float64 `json:"d,omitempty"`
}

func (l Lease) encode() string {
	data, _ := json.Marshal(l) // strings and numbers only
	return base64.RawURLEncoding.EncodeToString(data)
}

// Taken is the answer to a take that got an invocation (200).
type Taken struct {
	// Lease names the invocation in heartbeat and complete.
	Lease string `json:"lease"`
	// Invocation is the invocation as PROTOCOL.md section 5.3 describes
	// it (its token and reply are the gateway's business: the lease
	// carries them).
	Invocation *wire.Invocation `json:"invocation"`
	// Delivery is 1 on the attempt's first delivery, more on a
	// redelivery (the attempt may have run before).
	Delivery uint64 `json:"delivery"`
	// HeartbeatMs is how often to heartbeat: a third of AckWaitMs.
	HeartbeatMs int64 `json:"heartbeatMs"`
	// AckWaitMs is how long the invocation is the worker's without a
	// heartbeat; after it NATS hands it to another worker.
	AckWaitMs int64 `json:"ackWaitMs"`
}

// deadlineSkew is how long past an attempt's deadline the gateway still
// lends it, allowing for clock skew, as the Go SDK does.
const deadlineSkew = 2 * time.Second

// fetchSlice is the longest single pull of a take: the take notices its
// caller left within this.
const fetchSlice = 5 * time.Second

// take is POST /api/v1/tasks/{task}/{version}/take?wait=D: the next
// invocation of the task version, waiting up to D (default TakeWait); 204
// when none came.
func (g *Gateway) take(w http.ResponseWriter, r *http.Request) {
	wait, e := g.waitParam(r, "wait", g.cfg.TakeWait)
	if e != nil {
		writeError(w, e)
		return
	}
	grant, e := g.authorize(r, actWork)
	if e != nil {
		writeError(w, e)
		return
	}
	task, version := r.PathValue("task"), r.PathValue("version")
	if err := subjects.CheckTask(task); err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: err.Error(), Pointer: "path:task"})
		return
	}
	if err := subjects.CheckVersion(version); err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: err.Error(), Pointer: "path:version"})
		return
	}
	if !grant.serves(task, version) {
		writeError(w, &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf("role %s may not serve task %s@%s", grant.Name(), task, version), Pointer: "path:task"})
		return
	}
	cons, err := g.consumer(r.Context(), task, version)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeTaskUnknown, Message: fmt.Sprintf("task %s@%s has no consumer %s: no deployed workflow uses it (jetflow deploy creates it)", task, version, g.names.TaskConsumer(task, version)), Pointer: "path:task"})
		return
	}
	if err != nil {
		g.natsError(w, r, "binding task "+task+"@"+version, err)
		return
	}
	ackWait := cons.CachedInfo().Config.AckWait
	end := time.Now().Add(wait)
	for {
		left := time.Until(end)
		var batch jetstream.MessageBatch
		var err error
		if left < 100*time.Millisecond {
			batch, err = cons.FetchNoWait(1)
		} else {
			batch, err = cons.Fetch(1, jetstream.FetchMaxWait(min(left, fetchSlice)))
		}
		if err != nil {
			g.natsError(w, r, "pulling task "+task+"@"+version, err)
			return
		}
		for m := range batch.Messages() {
			if t := g.lend(r, m, task, version, ackWait); t != nil {
				writeJSON(w, http.StatusOK, t)
				return
			}
		}
		if r.Context().Err() != nil {
			return
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
			g.natsError(w, r, "pulling task "+task+"@"+version, err)
			return
		}
		if time.Until(end) < 100*time.Millisecond {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
}

// lend checks an invocation and makes its lease; nil when it was not
// lent: malformed or past its deadline (terminated), or the caller left
// (given back).
func (g *Gateway) lend(r *http.Request, m jetstream.Msg, task, version string, ackWait time.Duration) *Taken {
	log := g.log.With(slog.String("task", task), slog.String("version", version))
	inv, err := worker.ParseInvocation(m.Data(), g.names, task, version)
	if err != nil {
		log.Error("gateway: malformed invocation terminated", slog.Any("error", err))
		if err := m.TermWithReason(err.Error()); err != nil {
			log.Error("gateway: terminating a malformed invocation failed", slog.Any("error", err))
		}
		return nil
	}
	log = log.With(slog.String("run_id", inv.Run))
	if inv.Deadline > 0 && time.Now().After(time.UnixMilli(int64(inv.Deadline)).Add(deadlineSkew)) {
		log.Warn("gateway: invocation past its deadline; not lent")
		if err := m.TermWithReason("past its deadline"); err != nil {
			log.Error("gateway: terminating an invocation past its deadline failed", slog.Any("error", err))
		}
		return nil
	}
	if r.Context().Err() != nil {
		if err := m.Nak(); err != nil {
			log.Warn("gateway: giving back an invocation whose taker left failed; it returns after its ack wait", slog.Any("error", err))
		}
		return nil
	}
	var delivery uint64 = 1
	if md, err := m.Metadata(); err == nil {
		delivery = md.NumDelivered
	}
	l := Lease{
		Ack: m.Reply(), Task: task, Version: version, Run: inv.Run, Activation: inv.Activation,
		Node: inv.Node, Attempt: inv.Attempt, Token: inv.Token, Deadline: inv.Deadline,
	}
	return &Taken{
		Lease: l.encode(), Invocation: inv, Delivery: delivery,
		HeartbeatMs: (ackWait / 3).Milliseconds(), AckWaitMs: ackWait.Milliseconds(),
	}
}

// consumer binds a task version's consumer, once.
func (g *Gateway) consumer(ctx context.Context, task, version string) (jetstream.Consumer, error) {
	name := g.names.TaskConsumer(task, version)
	g.mu.Lock()
	c, ok := g.consumers[name]
	g.mu.Unlock()
	if ok {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := g.js.Consumer(ctx, g.names.TaskStream(), name)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.consumers[name] = c
	g.mu.Unlock()
	return c, nil
}

// lease decodes and checks the {lease} of a request for the caller.
func (g *Gateway) lease(r *http.Request) (Lease, *Error) {
	grant, e := g.authorize(r, actWork)
	if e != nil {
		return Lease{}, e
	}
	var l Lease
	data, err := base64.RawURLEncoding.DecodeString(r.PathValue("lease"))
	if err == nil {
		err = json.Unmarshal(data, &l)
	}
	bad := func(why string) (Lease, *Error) {
		return Lease{}, &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Message: "not a lease a take answered: " + why, Pointer: "path:lease"}
	}
	if err != nil {
		return bad(err.Error())
	}
	if subjects.CheckTask(l.Task) != nil || subjects.CheckVersion(l.Version) != nil || subjects.CheckRunID(l.Run) != nil || l.Token == "" || l.Activation == "" || l.Node == "" || l.Attempt < 1 {
		return bad("a member is missing or malformed")
	}
	// The acknowledgement goes to the consumer of the lease's task version
	// only: a lease cannot make the gateway publish anywhere else.
	stream, consumer := g.names.TaskStream(), g.names.TaskConsumer(l.Task, l.Version)
	tokens := strings.Split(l.Ack, ".")
	if !strings.HasPrefix(l.Ack, "$JS.ACK.") || strings.ContainsAny(l.Ack, " \t\r\n*>") ||
		(len(tokens) != 9 && len(tokens) < 11) || !ackNames(tokens, stream, consumer) {
		return bad("its acknowledgement subject is not one of consumer " + consumer)
	}
	if !grant.serves(l.Task, l.Version) {
		return Lease{}, &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf("role %s may not serve task %s@%s", grant.Name(), l.Task, l.Version), Pointer: "path:lease"}
	}
	return l, nil
}

// ackNames reports whether the tokens of an ack subject name stream and
// consumer: $JS.ACK.<stream>.<consumer>.… or, with a domain,
// $JS.ACK.<domain>.<hash>.<stream>.<consumer>.….
func ackNames(tokens []string, stream, consumer string) bool {
	if len(tokens) == 9 {
		return tokens[2] == stream && tokens[3] == consumer
	}
	return tokens[4] == stream && tokens[5] == consumer
}

// expired answers LEASE_EXPIRED once the attempt's deadline has passed.
func expired(l Lease) *Error {
	if l.Deadline > 0 && time.Now().After(time.UnixMilli(int64(l.Deadline)).Add(deadlineSkew)) {
		return &Error{
			Status: http.StatusGone, Code: CodeLeaseExpired, Run: l.Run, Pointer: "path:lease",
			Message: fmt.Sprintf("attempt %d of task %s@%s in run %s passed its deadline %s: jetflow failed it with TASK_TIMEOUT and refuses its result", l.Attempt, l.Task, l.Version, l.Run, time.UnixMilli(int64(l.Deadline)).UTC().Format(time.RFC3339Nano)),
		}
	}
	return nil
}

// CodeLeaseExpired is the answer (410) to a heartbeat or completion of an
// attempt whose deadline has passed.
const CodeLeaseExpired = "LEASE_EXPIRED"

// heartbeat is POST /api/v1/leases/{lease}/heartbeat: the invocation stays
// the worker's for another ack wait.
func (g *Gateway) heartbeat(w http.ResponseWriter, r *http.Request) {
	l, e := g.lease(r)
	if e == nil {
		e = expired(l)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	nc := g.js.Conn()
	if err := nc.Publish(l.Ack, []byte("+WPI")); err != nil {
		g.natsError(w, r, "heartbeat", err)
		return
	}
	ctx, cancel := opContext(r)
	defer cancel()
	if err := nc.FlushWithContext(ctx); err != nil {
		g.natsError(w, r, "heartbeat", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"run": l.Run})
}

// CompleteRequest is the body of POST /api/v1/leases/{lease}/complete:
// exactly one of output and error.
type CompleteRequest struct {
	Output json.RawMessage `json:"output"`
	Error  *wire.TaskError `json:"error"`
}

// Completed is the answer to a completion (200).
type Completed struct {
	Run string `json:"run"`
	// Seq is the result's sequence in the input stream; Duplicate says
	// the stream had it already (a repeated completion).
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// complete is POST /api/v1/leases/{lease}/complete: publishes the result
// (PROTOCOL.md section 5.6) and acknowledges the invocation.
func (g *Gateway) complete(w http.ResponseWriter, r *http.Request) {
	l, e := g.lease(r)
	if e == nil {
		e = expired(l)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	var req CompleteRequest
	if e := g.decodeObject(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Output == nil && req.Error == nil:
		writeError(w, invalid("/output", "give output (null is an output) or error"))
		return
	case req.Output != nil && req.Error != nil:
		writeError(w, invalid("/error", "give output or error, not both"))
		return
	case req.Error != nil && strings.TrimSpace(req.Error.Message) == "":
		writeError(w, invalid("/error/message", "an error needs a message: what the workflow sees"))
		return
	}
	body, _ := json.Marshal(wire.Result{Activation: l.Activation, Node: l.Node, Attempt: l.Attempt, Token: l.Token, Output: req.Output, Error: req.Error})
	m := nats.NewMsg(g.names.Result(l.Run))
	m.Data = body
	m.Header.Set(wire.HeaderMsgID, worker.ResultMsgID(l.Token))
	m.Header.Set("Nats-Expected-Stream", g.names.InputStream())
	ctx, cancel := opContext(r)
	defer cancel()
	ack, err := g.js.PublishMsg(ctx, m)
	var ae *jetstream.APIError
	if errors.As(err, &ae) && ae.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum {
		writeError(w, &Error{
			Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Run: l.Run, Pointer: "/output",
			Message: "the result exceeds the server's max payload: complete with an error instead, or keep large data elsewhere and return a reference",
		})
		return
	}
	if err != nil {
		g.natsError(w, r, "publishing the result of run "+l.Run, err)
		return
	}
	// The result is stored: the invocation is done. A lost ack only means
	// a redelivery, whose result the stream or the run drops.
	if _, err := g.js.Conn().RequestWithContext(ctx, l.Ack, []byte("+ACK")); err != nil {
		g.log.Warn("gateway: acknowledging an invocation failed; it may be redelivered", slog.String("run_id", l.Run), slog.Any("error", err))
	}
	writeJSON(w, http.StatusOK, Completed{Run: l.Run, Seq: ack.Sequence, Duplicate: ack.Duplicate})
}
