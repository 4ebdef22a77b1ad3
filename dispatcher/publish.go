package dispatcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/tracing"
	"github.com/jetflow/jetflow/wire"
)

// legacyTimer rewrites a schedule that a record saved before the timer
// stream existed still owes: its target was the input stream's timer
// subject, which the timer stream refuses.
func legacyTimer(names subjects.Names, m *nats.Msg) {
	target := m.Header.Get(wire.HeaderScheduleTarget)
	if runID, kind, _, err := names.ParseInput(target); err == nil && kind == subjects.KindTimer {
		m.Header.Set(wire.HeaderScheduleTarget, names.Fired(runID))
		m.Header.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
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
	// traced says tracing is on: invocations carry the span of the
	// step that publishes them (tracing.Inject).
	traced bool
	now    func() time.Time
	// limit applies the task versions' rate limits (limit.go); nil
	// applies none.
	limit *limiter
	// payloads takes invocations and announcements larger than its
	// threshold (nil: every message goes inline).
	payloads *payload.Store
	// fail, in tests, fails the publish of a message to a subject with
	// the error it returns, as a server outage does.
	fail func(subject string) error
}

// byRef sends m by reference when it is larger than the payload
// threshold (payload.Store.Send: the object is named for its content, so
// that a repeat of the publish writes nothing new).
func (p publisher) byRef(ctx context.Context, m *nats.Msg, kind string) error {
	if p.payloads == nil || len(m.Data) <= p.payloads.Threshold() {
		return nil
	}
	runID := m.Header.Get(wire.HeaderRunID)
	if runID == "" {
		runID = strings.TrimPrefix(m.Subject, p.names.Status(""))
	}
	if _, err := p.payloads.Send(ctx, m, runID, kind); err != nil {
		return fmt.Errorf("publish %s by reference: %w", m.Subject, err)
	}
	return nil
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
	m.Header.Set(wire.HeaderTTL, strconv.FormatInt(int64(max(time.Second, left).Round(time.Second)/time.Second), 10))
}

// publish sends every outgoing message: invocations and timer schedules
// (to the task and timer streams) through JetStream with Nats-Msg-Id (so a repeat within the stream's
// duplicate window stores nothing), status announcements on core NATS
// after them (the saved record is the truth; an announcement is a hint).
func (p publisher) publish(ctx context.Context, out []runrecord.Outgoing) error {
	_, err := p.publishRest(ctx, out, nil)
	return err
}

// publishRest is publish of the messages whose ids done does not hold.
// When it fails it returns the ids of the messages the streams
// acknowledged (or the rate limit dropped) with those of done: after a
// flush an outage cut short, a later flush of the same outbox publishes
// only the rest, since the server's duplicate window may no longer drop
// a copy (recordCache.ackedAt). A message without an id is published
// every time.
func (p publisher) publishRest(ctx context.Context, out []runrecord.Outgoing, done map[string]bool) (acked map[string]bool, err error) {
	var js []outMsg
	var dropped []string // by the rate limit: nothing to publish again
	// sent is what went out when the flush fails, nil when it did not.
	sent := func(stored []bool) map[string]bool {
		acked := make(map[string]bool, len(done)+len(js))
		for id := range done {
			acked[id] = true
		}
		for _, id := range dropped {
			acked[id] = true
		}
		for i, ok := range stored {
			if ok && js[i].id != "" {
				acked[js[i].id] = true
			}
		}
		return acked
	}
	for _, o := range out {
		if o.Kind != runrecord.OutStatus {
			if o.ID != "" && done[o.ID] {
				continue
			}
			m := step.Msg(o)
			switch o.Kind {
			case runrecord.OutTimer:
				legacyTimer(p.names, m)
			case runrecord.OutInvoke:
				if err := p.byRef(ctx, m, payload.KindInvoke); err != nil {
					return sent(nil), err
				}
				p.expire(m)
				if p.traced {
					tracing.Inject(ctx, m.Header)
				}
				if p.limit != nil {
					held, err := p.limit.limit(ctx, m)
					if err != nil {
						return sent(nil), err
					}
					if held == nil {
						if o.ID != "" {
							dropped = append(dropped, o.ID)
						}
						continue
					}
					m = held
				}
			}
			js = append(js, outMsg{m, o.ID})
		}
	}
	if stored, err := p.send(ctx, js); err != nil {
		return sent(stored), err
	}
	for _, o := range out {
		if o.Kind == runrecord.OutStatus {
			m := step.Msg(o)
			if err := p.byRef(ctx, m, payload.KindStatus); err != nil {
				return nil, err
			}
			if err := p.nc.PublishMsg(m); err != nil {
				return nil, fmt.Errorf("announce %s: %w", o.Subject, err)
			}
		}
	}
	return nil, nil
}

// outMsg is a message for JetStream and the outbox id it stands for.
type outMsg struct {
	m  *nats.Msg
	id string
}

// send publishes js through JetStream and waits for every
// acknowledgement. When one fails, stored says which the streams
// acknowledged (nil: none, or all when there is no error).
func (p publisher) send(ctx context.Context, js []outMsg) (stored []bool, err error) {
	if len(js) == 1 {
		if err := p.failed(js[0].m.Subject); err != nil {
			return nil, err
		}
		if _, err := p.js.PublishMsg(ctx, js[0].m); err != nil {
			return nil, p.publishError(js[0].m.Subject, err)
		}
		return nil, nil
	}
	futures := make([]jetstream.PubAckFuture, 0, len(js))
	// fail notes a failure at i; waited says the futures before i were
	// acknowledged (while waiting), not merely sent (while publishing).
	fail := func(i int, e error, waited bool) {
		if stored == nil {
			stored = make([]bool, len(js))
			for j := range i {
				stored[j] = waited
			}
		}
		err = cmp.Or(err, e)
	}
	for i, x := range js {
		if e := p.failed(x.m.Subject); e != nil {
			futures = append(futures, nil)
			fail(i, e, false)
			continue
		}
		f, e := p.js.PublishMsgAsync(x.m)
		if e != nil {
			return nil, p.publishError(x.m.Subject, e)
		}
		futures = append(futures, f)
	}
	// Every acknowledgement is awaited, not only those before the first
	// failure, so that stored says all that was stored.
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case <-f.Ok():
			if stored != nil {
				stored[i] = true
			}
		case e := <-f.Err():
			fail(i, p.publishError(f.Msg().Subject, e), true)
		case <-ctx.Done():
			fail(i, fmt.Errorf("publish %s: %w", f.Msg().Subject, context.Cause(ctx)), true)
			return stored, err
		}
	}
	return stored, err
}

// failed is the test hook's error for a publish to subject, if any.
func (p publisher) failed(subject string) error {
	if p.fail == nil {
		return nil
	}
	if err := p.fail(subject); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}

// publishError says what failed to publish, and what to do when the
// stream of a queued invocation is missing: a deployment provisioned
// before queues, whose task policy asks for priority or a key.
func (p publisher) publishError(subject string, err error) error {
	if _, _, _, _, queued := p.names.ParseQueue(subject); queued && errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("publish %s: the queue stream %q is not provisioned, and the task version's policy sets priority, priorityFrom or key: provision again (a dispatcher started with --provision, or provision.Provision) or remove them from the policy: %w", subject, p.names.QueueStream(), err)
	}
	return fmt.Errorf("publish %s: %w", subject, err)
}
