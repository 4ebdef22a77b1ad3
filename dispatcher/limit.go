package dispatcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/taskconsumer"
	"github.com/jetflow/jetflow/wire"
)

// A task version's rate limit (docs/POLICY.md#rate-limits) is carried by
// its consumer's metadata (taskconsumer.Rate) and enforced here, where
// every invocation is published: each takes a start slot from a generic
// cell rate algorithm whose one number per task version, the theoretical
// arrival time (TAT) of its next invocation, lives in the limits bucket and
// moves forward by compare-and-swap, so the slots of every dispatcher
// together keep to the rate. An invocation whose slot has come is
// published as usual; one whose slot is later is published as a message
// schedule (subjects.Names.Hold) that the server produces at the slot on
// the task version's release subject, which the task stream copies onto
// the task subject. No process of ours holds it: a dispatcher may die the
// moment after.

// RateRefresh is how long a dispatcher keeps a task version's rate limit
// before reading its consumer again: a deploy that changes it takes
// effect within this time.
const RateRefresh = 5 * time.Second

// holdMargin: a slot this close is not worth a schedule (the server's
// scheduler fires at 250 ms at best).
const holdMargin = 5 * time.Millisecond

// limiter gives invocations their start slots.
type limiter struct {
	js    jetstream.JetStream
	names subjects.Names
	now   func() time.Time
	log   *slog.Logger

	mu    sync.Mutex
	rates map[string]rateEntry
	kv    jetstream.KeyValue
}

type rateEntry struct {
	perSecond float64
	burst     int
	read      time.Time
}

// rate is the task version's rate limit, 0 for none, read from its
// consumer at most every RateRefresh.
func (l *limiter) rate(ctx context.Context, task, vtok string) (float64, int, error) {
	key := task + "." + vtok
	now := l.now()
	l.mu.Lock()
	e, ok := l.rates[key]
	l.mu.Unlock()
	if ok && now.Sub(e.read) < RateRefresh {
		return e.perSecond, e.burst, nil
	}
	c, err := l.js.Consumer(ctx, l.names.TaskStream(), l.names.TaskConsumer(task, vtok))
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		e = rateEntry{read: now}
	case err != nil:
		return 0, 0, fmt.Errorf("reading the rate limit of task %s version %s from consumer %q: %w", task, vtok, l.names.TaskConsumer(task, vtok), err)
	default:
		r, b := taskconsumer.Rate(c.CachedInfo().Config)
		e = rateEntry{perSecond: r, burst: b, read: now}
	}
	l.mu.Lock()
	if l.rates == nil {
		l.rates = map[string]rateEntry{}
	}
	l.rates[key] = e
	l.mu.Unlock()
	return e.perSecond, e.burst, nil
}

func (l *limiter) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	kv := l.kv
	l.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err := l.js.KeyValue(ctx, l.names.LimitsBucket())
	if err != nil {
		return nil, fmt.Errorf("binding the rate limit bucket %q (provision with a dispatcher started with --provision, or provision.Provision, first): %w", l.names.LimitsBucket(), err)
	}
	l.mu.Lock()
	l.kv = kv
	l.mu.Unlock()
	return kv, nil
}

// tatState is a task version's value in the limits bucket.
type tatState struct {
	// TAT is the theoretical arrival time of the next invocation, Unix ms.
	TAT float64 `json:"tat"`
}

// gcra is one step of the algorithm: the slot of an invocation asking at
// now, and the TAT after it. interval is 1/rate, burst how many may share
// one instant.
func gcra(tat, now, interval float64, burst int) (slot, next float64) {
	tat = math.Max(tat, now)
	slot = math.Max(now, tat-float64(burst-1)*interval)
	return slot, tat + interval
}

// slot takes the next start slot of a task version: the time its
// invocation may be released. An invocation whose slot would come after
// its deadline takes none (taken false): its attempt times out at the
// deadline anyway, and the slot stays for another.
func (l *limiter) slot(ctx context.Context, task, vtok string, perSecond float64, burst int, deadline time.Time) (slot time.Time, taken bool, err error) {
	kv, err := l.bucket(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	key := subjects.LimitKey(task, vtok)
	interval := 1000 / perSecond
	for range 100 {
		var st tatState
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return time.Time{}, false, fmt.Errorf("reading rate limit %s/%s: %w", l.names.LimitsBucket(), key, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &st); err != nil {
				st = tatState{} // unreadable: start afresh
			}
		}
		now := float64(l.now().UnixMicro()) / 1000
		s, next := gcra(st.TAT, now, interval, burst)
		at := time.UnixMicro(int64(s * 1000))
		if !deadline.IsZero() && at.After(deadline) {
			return at, false, nil
		}
		body, _ := json.Marshal(tatState{TAT: next})
		if rev == 0 {
			_, err = kv.Create(ctx, key, body)
		} else {
			_, err = kv.Update(ctx, key, body, rev)
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue // another dispatcher took a slot first
		}
		if err != nil {
			return time.Time{}, false, fmt.Errorf("taking a slot of rate limit %s/%s: %w", l.names.LimitsBucket(), key, err)
		}
		return at, true, nil
	}
	return time.Time{}, false, fmt.Errorf("taking a slot of rate limit %s/%s: 100 compare-and-swap conflicts in a row", l.names.LimitsBucket(), key)
}

// limit applies the task version's rate limit to invocation m: it
// returns m itself when its slot has come (or no limit applies), a
// schedule that releases it at its slot, or nil when its slot would come
// after its deadline (the attempt then times out there).
func (l *limiter) limit(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	task, vtok, ok := l.names.ParseTask(m.Subject)
	if !ok {
		return m, nil
	}
	perSecond, burst, err := l.rate(ctx, task, vtok)
	if err != nil || perSecond <= 0 {
		return m, err
	}
	var deadline time.Time
	if d, err := strconv.ParseFloat(m.Header.Get(wire.HeaderDeadline), 64); err == nil && d > 0 {
		deadline = time.UnixMilli(int64(d))
	}
	at, taken, err := l.slot(ctx, task, vtok, perSecond, burst, deadline)
	if err != nil {
		return nil, err
	}
	if !taken {
		l.log.Warn("dispatcher: an invocation's rate limit slot comes after its deadline; it is not published and its attempt times out",
			slog.String("task", task), slog.String("version", vtok), slog.Time("slot", at), slog.Time("deadline", deadline))
		return nil, nil
	}
	if !at.After(l.now().Add(holdMargin)) {
		return m, nil
	}
	return hold(l.names, task, vtok, m, at, l.now()), nil
}

// hold is invocation m as a schedule that the server produces at at on
// the task version's release subject, with m's headers and body. The
// schedule's subject is named by m's de-duplication id, so a repeat of
// the publish replaces it (and, within the duplicate window, is dropped).
func hold(names subjects.Names, task, vtok string, m *nats.Msg, at, now time.Time) *nats.Msg {
	id := m.Header.Get(wire.HeaderMsgID)
	if id == "" {
		id = m.Subject + "\x00" + string(m.Data)
	}
	sum := sha256.Sum256([]byte(id))
	h := nats.NewMsg(names.Hold(task, vtok, hex.EncodeToString(sum[:12])))
	h.Data = m.Data
	for k, v := range m.Header {
		h.Header[k] = append([]string(nil), v...)
	}
	// The release stays in the timer stream, which has no MaxAge, only
	// until it expires: as long as the invocation would, else as long as
	// a fired timer.
	h.Header.Set(wire.HeaderScheduleTTL, wire.FiredTimerTTLValue)
	if ttl := h.Header.Get(wire.HeaderTTL); ttl != "" {
		// The schedule stays until it fires; the invocation it produces
		// expires as the one published directly would.
		h.Header.Del(wire.HeaderTTL)
		if secs, err := strconv.ParseInt(ttl, 10, 64); err == nil {
			left := time.Duration(secs)*time.Second - at.Sub(now)
			h.Header.Set(wire.HeaderScheduleTTL, strconv.FormatInt(int64(max(time.Second, left).Round(time.Second)/time.Second), 10))
		}
	}
	h.Header.Set(wire.HeaderSchedule, "@at "+at.UTC().Format(time.RFC3339Nano))
	h.Header.Set(wire.HeaderScheduleTarget, names.Release(task, vtok))
	return h
}
