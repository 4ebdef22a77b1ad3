// Package client is how applications drive jetflow runs: start a run,
// send it events, cancel it, read its status, wait for its outcome and
// follow its progress (Watch, Tracker). It only publishes to the
// run-input stream and reads the run bucket; the dispatchers do the rest.
package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// ErrRunNotFound is returned by Status for a run that has no record (yet).
// It is kvstore.ErrRunNotFound, declared there; the client names it too so
// that applications, which use only the client, can match it without
// importing the storage package.
var ErrRunNotFound = kvstore.ErrRunNotFound

// ErrTooLarge is wrapped when a start, event or cancel body is larger than
// the client may publish (Config.MaxPayload); nothing is published.
var ErrTooLarge = errors.New("message body too large")

// Config configures a Client.
type Config struct {
	// Names builds every subject and bucket name. Default: subjects.Must("").
	Names subjects.Names
	// Store reads run records. Default: the run bucket named by Names.
	// Watch follows them with it too when it has WatchRun, as
	// *kvstore.RunStore has, and binds the run bucket otherwise.
	Store RunStore
	// RecheckInterval is how long Wait first waits for an announcement
	// before reading the run again; it doubles up to MaxRecheckInterval.
	// Default: 250ms.
	RecheckInterval time.Duration
	// MaxRecheckInterval caps RecheckInterval. Default: 5s.
	MaxRecheckInterval time.Duration
	// MaxPayload is the largest body StartRun, SendEvent and Cancel
	// publish; a larger one is refused with ErrTooLarge before it leaves
	// the process. Default: 0, the server's max_payload as the connection
	// reports it.
	MaxPayload int
	// Search gives the search attributes of a workflow revision's runs,
	// so that a listing or bulk job that reads the run records (a scan)
	// can answer a filter's Where; runindex.RegistrySearch reads them from
	// the deployments. Default nil: a scan refuses Where.
	Search SearchFunc
	// PayloadThreshold is the largest start or event body published
	// inline; a larger one is put in the payload bucket and travels by
	// reference (docs/PROTOCOL.md 2.4), and run records kept there are
	// read back. Default: payload.DefaultThreshold (512 KiB). Without
	// the payload bucket every body goes inline, up to MaxPayload.
	PayloadThreshold int
}

// WithDefaults returns a copy of c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.Must("")
	}
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = 250 * time.Millisecond
	}
	if c.MaxRecheckInterval < c.RecheckInterval {
		c.MaxRecheckInterval = max(5*time.Second, c.RecheckInterval)
	}
	return c
}

// RunStore reads run records by run id: *kvstore.RunStore, or anything
// that serves a run bucket's records as it does (a dispatcher.RunStore
// is one).
type RunStore interface {
	// Get returns the record bytes and revision, or an error wrapping
	// ErrRunNotFound.
	Get(ctx context.Context, runID string, opts ...kvstore.ReadOption) ([]byte, uint64, error)
}

// Client publishes run inputs and reads run records.
type Client struct {
	js jetstream.JetStream
	// payloads is nil when the payload bucket is not provisioned.
	payloads *payload.Store
	cfg      Config
	names    subjects.Names
	store    RunStore
	jobs     jobs
}

// New returns a client. Without cfg.Store it binds the run bucket, which
// must already be provisioned.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Client, error) {
	if js == nil {
		return nil, errors.New("client: nil JetStream context")
	}
	cfg = cfg.WithDefaults()
	c := &Client{js: js, cfg: cfg, names: cfg.Names, store: cfg.Store}
	ps, err := payload.Open(ctx, js, payload.Config{Names: cfg.Names, Threshold: cfg.PayloadThreshold})
	if err != nil && !errors.Is(err, payload.ErrNoBucket) {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.payloads = ps
	if c.store == nil {
		rs, err := kvstore.OpenRunStore(ctx, js, cfg.Names)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		if ps != nil {
			rs.WithPayloads(ps)
		}
		c.store = rs
	}
	return c, nil
}

// StartOption adjusts StartRun.
type StartOption func(*wire.Start)

// WithRevision pins the run to a deployed revision instead of the latest.
func WithRevision(rev string) StartOption { return func(s *wire.Start) { s.Revision = rev } }

// WithPriority gives the run a priority from wire.MinPriority (0) to
// wire.MaxPriority (9): its task invocations inherit it where their task
// version's policy queues them, and higher priority work is delivered
// first (docs/POLICY.md#priority-and-fairness). A priority outside the
// range is taken as the nearest end of it.
func WithPriority(p int) StartOption {
	p = min(max(p, wire.MinPriority), wire.MaxPriority)
	return func(s *wire.Start) { s.Priority = &p }
}

// StartRun starts run runID of the deployed workflow with input (any value
// encoding/json marshals; json.RawMessage is sent as is). Starting a run
// id that already has a run does nothing to that run: the dispatcher
// rejects the second start (the run bucket creates a run only if absent).
//
// The start's Nats-Msg-Id is "start/<run>/<nonce>", the nonce random for
// each call: JetStream drops a retry of this call's publish as a duplicate,
// while nobody else can guess the id and publish under it first, which
// would make the stream drop this start as a duplicate of theirs.
func (c *Client) StartRun(ctx context.Context, workflow, runID string, input any, opts ...StartOption) error {
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("client: start: %w", err)
	}
	if err := subjects.CheckWorkflowName(workflow); err != nil {
		return fmt.Errorf("client: start: %w", err)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("client: start %s: encode input: %w", runID, err)
	}
	body := wire.Start{Workflow: workflow, Input: in}
	for _, o := range opts {
		o(&body)
	}
	if err := body.CheckControls(); err != nil {
		return fmt.Errorf("client: start %s: %w", runID, err)
	}
	return c.publish(ctx, c.names.Start(runID), msgID(subjects.KindStart, runID, ""), body)
}

// StartWithEvent starts run runID of workflow with input and delivers an
// event of eventType with payload in the same step, so that nothing sees
// the run without it; when the run exists and has not ended, it delivers
// the event alone, and when the run has ended the run records the refusal
// (signal with start). eventID, when not empty, de-duplicates the message
// as EventID does; it returns the message's stream sequence.
func (c *Client) StartWithEvent(ctx context.Context, workflow, runID string, input any, eventType string, payload any, eventID string, opts ...StartOption) (uint64, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return 0, fmt.Errorf("client: start: %w", err)
	}
	if err := subjects.CheckWorkflowName(workflow); err != nil {
		return 0, fmt.Errorf("client: start: %w", err)
	}
	if err := subjects.CheckEventType(eventType); err != nil {
		return 0, fmt.Errorf("client: start: event: %w", err)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return 0, fmt.Errorf("client: start %s: encode input: %w", runID, err)
	}
	ev := &wire.StartEvent{Type: eventType}
	if payload != nil {
		if ev.Payload, err = json.Marshal(payload); err != nil {
			return 0, fmt.Errorf("client: start %s: encode event payload: %w", runID, err)
		}
	}
	body := wire.Start{Workflow: workflow, Input: in, Event: ev}
	for _, o := range opts {
		o(&body)
	}
	if err := body.CheckControls(); err != nil {
		return 0, fmt.Errorf("client: start %s: %w", runID, err)
	}
	key := ""
	if eventID != "" {
		key = "event/" + eventID
	}
	return c.publishSeq(ctx, c.names.Start(runID), msgID(subjects.KindStart, runID, key), body)
}

// EventOption adjusts SendEvent.
type EventOption func(*eventOpts)

type eventOpts struct {
	id  string
	seq *uint64
}

// EventID de-duplicates the event: a second event with the same id for the
// same run within the stream's duplicate window is dropped, also when sent
// by another call or process (the id is "event/<run>/<id>"). Anyone
// allowed to send events can use that too: an id they can guess lets them
// send an event under it first and have yours dropped. Use an id only the
// senders of this event know, such as a random one kept with the payment
// it reports, never a predictable counter or business key alone.
func EventID(id string) EventOption { return func(o *eventOpts) { o.id = id } }

// EventSeq stores the event's stream sequence in *seq once the stream has
// stored it, so that the caller can tell what the run made of it: the
// run's record lists the sequence among its applied inputs or refusals.
func EventSeq(seq *uint64) EventOption { return func(o *eventOpts) { o.seq = seq } }

// SendEvent sends an external event of eventType with payload to a run.
// Without EventID its Nats-Msg-Id is random for each call: a retry of this
// call's publish is dropped as a duplicate, a second call is another event.
func (c *Client) SendEvent(ctx context.Context, runID, eventType string, payload any, opts ...EventOption) error {
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("client: event: %w", err)
	}
	if err := subjects.CheckEventType(eventType); err != nil {
		return fmt.Errorf("client: event: %w", err)
	}
	var o eventOpts
	for _, opt := range opts {
		opt(&o)
	}
	seq, err := c.publishSeq(ctx, c.names.Event(runID, eventType), msgID(subjects.KindEvent, runID, o.id), payload)
	if err == nil && o.seq != nil {
		*o.seq = seq
	}
	return err
}

// Cancel asks for a run to end cancelled. Its Nats-Msg-Id is random for
// each call, as a start's.
func (c *Client) Cancel(ctx context.Context, runID, reason string) error {
	if err := subjects.CheckRunID(runID); err != nil {
		return fmt.Errorf("client: cancel: %w", err)
	}
	return c.publish(ctx, c.names.Cancel(runID), msgID(subjects.KindCancel, runID, ""), wire.Cancel{Reason: reason})
}

// msgID is the Nats-Msg-Id of an input: "<kind>/<run>/<key>", where key is
// the caller's idempotency key or else a random nonce (128 bits), so that
// nobody can publish under the id first and get this input dropped.
func msgID(kind, runID, key string) string {
	if key == "" {
		key = rand.Text()
	}
	return kind + "/" + runID + "/" + key
}

func (c *Client) publish(ctx context.Context, subject, msgID string, body any) error {
	_, err := c.publishSeq(ctx, subject, msgID, body)
	return err
}

// publishSeq publishes as publish does and returns the input's stream
// sequence.
func (c *Client) publishSeq(ctx context.Context, subject, msgID string, body any) (uint64, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("client: encode %s: %w", subject, err)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	if runID, kind, _, err := c.names.ParseInput(subject); err == nil && (kind == subjects.KindStart || kind == subjects.KindEvent) {
		if _, err := c.payloads.Send(ctx, m, runID, kind); err != nil {
			return 0, fmt.Errorf("client: publish %s by reference: %w", subject, err)
		}
	}
	limit, source := c.cfg.MaxPayload, "client.Config.MaxPayload"
	if limit <= 0 {
		limit, source = int(c.js.Conn().MaxPayload()), "the server's max_payload"
	}
	if limit > 0 && len(m.Data) > limit {
		hint := ""
		if c.payloads == nil {
			hint = fmt.Sprintf(" (the payload bucket %q that would carry it by reference is not provisioned)", c.names.PayloadBucket())
		}
		return 0, fmt.Errorf("client: publish %s: %w: the body is %d bytes, more than the %d bytes allowed by %s%s", subject, ErrTooLarge, len(data), limit, source, hint)
	}
	// nats.go retries this same message (same id) while the stream has no
	// responders; the id makes those retries harmless.
	m.Header.Set(wire.HeaderMsgID, msgID)
	ack, err := c.js.PublishMsg(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("client: publish %s: %w", subject, err)
	}
	return ack.Sequence, nil
}

// Status returns the run's status as its record holds it (step.StatusOf:
// the last one announced, or the state's own when the state has moved
// past it or nothing was announced yet), or an error wrapping
// ErrRunNotFound.
func (c *Client) Status(ctx context.Context, runID string) (*wire.Status, error) {
	data, _, err := c.store.Get(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("client: status: %w", err)
	}
	rec, err := runrecord.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("client: status %s: %w", runID, err)
	}
	ws, err := step.StatusOf(runID, rec, nil)
	if err != nil {
		return nil, fmt.Errorf("client: status %s: %w", runID, err)
	}
	return ws, nil
}

// Wait returns the run's status once it is done, failed, cancelled or
// terminated (a paused run is not settled: Wait goes on waiting), or an
// error wrapping runrecord.ErrRemoved once retention removed it. It
// listens for the run's announcements and reads the record at growing
// intervals (an announcement may be missed; the record is the truth).
func (c *Client) Wait(ctx context.Context, runID string) (*wire.Status, error) {
	if err := subjects.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("client: wait: %w", err)
	}
	nc := c.js.Conn()
	sub, err := nc.SubscribeSync(c.names.Status(runID))
	if err != nil {
		return nil, fmt.Errorf("client: wait %s: %w", runID, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The subscription should reach the server before the first read, or
	// an announcement between the two is missed until the next read.
	if err := c.flush(ctx, nc); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("client: wait %s: %w", runID, err)
	}
	interval := c.cfg.RecheckInterval
	for {
		st, err := c.statusWithin(ctx, runID)
		switch {
		case err == nil && run.Status(st.Status).Terminal():
			return st, nil
		case errors.Is(err, runrecord.ErrRemoved):
			// Settled and removed by retention: it never settles again.
			return nil, fmt.Errorf("client: wait %s: %w", runID, err)
		case err != nil && !errors.Is(err, ErrRunNotFound) && ctx.Err() != nil:
			return nil, fmt.Errorf("client: wait %s: %w", runID, context.Cause(ctx))
		}
		// Other read errors are retried at the next interval.
		if st, err := nextTerminal(ctx, sub, interval); st != nil || err != nil {
			return st, err
		}
		interval = min(2*interval, c.cfg.MaxRecheckInterval)
	}
}

// waitReadTimeout bounds each read Wait makes: a request lost to a
// reconnect (its server died) is never answered, and would otherwise hold
// Wait until ctx ends although the run settled long before.
const waitReadTimeout = 5 * time.Second

func (c *Client) statusWithin(ctx context.Context, runID string) (*wire.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, waitReadTimeout)
	defer cancel()
	return c.Status(ctx, runID)
}

func (c *Client) flush(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, waitReadTimeout)
	defer cancel()
	return nc.FlushWithContext(ctx)
}

// nextTerminal returns the first terminal announcement within d, or nil
// when d passes without one.
func nextTerminal(ctx context.Context, sub *nats.Subscription, d time.Duration) (*wire.Status, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("client: wait: %w", context.Cause(ctx))
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, nil
			}
			return nil, fmt.Errorf("client: wait: %w", err)
		}
		if m.Header.Get(wire.HeaderPayload) != "" {
			return nil, nil // too large to announce inline: read the record
		}
		var st wire.Status
		if json.Unmarshal(m.Data, &st) == nil && run.Status(st.Status).Terminal() {
			return &st, nil
		}
	}
}
