package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// Bucket is a bound KV bucket plus what a leader read needs: the backing
// stream and the subject prefix of its keys. The stores of jetflow's
// buckets (RunStore here, the workflow registry in package registry)
// read and scan through it.
type Bucket struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	name   string
	stream string
	prefix string // "$KV.<bucket>."
}

// BindBucket binds bucket name of the deployment names (it must be
// provisioned: else the error wraps ErrNotProvisioned).
func BindBucket(ctx context.Context, js jetstream.JetStream, names subjects.Names, name string) (*Bucket, error) {
	if err := checkNames(names); err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("kvstore: bucket %q: %w (run Provision first): %w", name, ErrNotProvisioned, err)
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: bind bucket %q: %w", name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("kvstore: status of bucket %q: %w", name, err)
	}
	b := &Bucket{js: js, kv: kv, name: name, stream: names.KVStream(name), prefix: names.KVKeyPrefix(name)}
	// Prefer what the server reports over the KV naming convention.
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		cfg := bs.StreamInfo().Config
		b.stream = cfg.Name
		if len(cfg.Subjects) == 1 && strings.HasSuffix(cfg.Subjects[0], ".>") {
			b.prefix = strings.TrimSuffix(cfg.Subjects[0], ">")
		}
	}
	return b, nil
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// KV is the bucket itself, for writes and watches.
func (b *Bucket) KV() jetstream.KeyValue { return b.kv }

// Value is one key's current value.
type Value struct {
	Data     []byte
	Revision uint64
	// Created is when this revision was stored (server time).
	Created time.Time
}

// ErrNoKey is returned by Get for an absent or deleted key; callers wrap
// their own sentinel around it.
var ErrNoKey = jetstream.ErrKeyNotFound

// Get reads key. fromLeader reads through the stream leader (the
// non-direct message API) instead of a direct get, which any replica may
// answer from behind: use it to read your own or another writer's latest
// write on a replicated bucket. Errors a cluster gives while it elects a
// leader or a restarted node rejoins ("no responders") are retried with
// backoff for up to readRetryFor.
func (b *Bucket) Get(ctx context.Context, key string, fromLeader bool) (Value, error) {
	return Retry(ctx, readRetryFor, func() (Value, error) {
		e, err := b.getOnce(ctx, key, fromLeader)
		if err != nil && !readTransient(err) {
			return e, Permanent(err)
		}
		return e, err
	})
}

// readRetryFor bounds the retries of a read.
const readRetryFor = 5 * time.Second

// readTransient reports errors worth another read: not timeouts, which
// already waited a full request timeout.
func readTransient(err error) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting) {
		return true
	}
	var ae *jetstream.APIError
	return errors.As(err, &ae) && (ae.ErrorCode == codeNotAvailable || ae.ErrorCode == codeNotLeader)
}

func (b *Bucket) getOnce(ctx context.Context, key string, fromLeader bool) (Value, error) {
	if !fromLeader {
		e, err := b.kv.Get(ctx, key)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
				return Value{}, ErrNoKey
			}
			return Value{}, err
		}
		return Value{Data: e.Value(), Revision: e.Revision(), Created: e.Created()}, nil
	}
	m, err := b.leaderLast(ctx, b.prefix+key)
	if err != nil {
		return Value{}, err
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return Value{}, ErrNoKey
	}
	// The marker the server leaves where a value's TTL ran out (a
	// tombstone's), as jetstream.KeyValue.Get takes it.
	if m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return Value{}, ErrNoKey
	}
	return Value{Data: m.Data, Revision: m.Sequence, Created: m.Time}, nil
}

// msgGetResponse is the reply of $JS.API.STREAM.MSG.GET.<stream>.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// leaderLast fetches the last message on subject through the stream
// leader. nats.go always uses direct gets on streams that allow them (KV
// streams do), so the request is made by hand.
func (b *Bucket) leaderLast(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, b.js, b.stream, map[string]any{"last_by_subj": subject})
}

// FirstOnSubject returns the stream sequence of the first message on
// subject in stream, 0 when it holds none, read through the stream
// leader: a replica that lags would answer "none" for a message already
// stored, and a caller that refuses an input on that answer would lose it.
func FirstOnSubject(ctx context.Context, js jetstream.JetStream, stream, subject string) (uint64, error) {
	m, err := leaderGet(ctx, js, stream, map[string]any{"seq": 1, "next_by_subj": subject})
	if errors.Is(err, ErrNoKey) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// leaderGet is one $JS.API.STREAM.MSG.GET request, which the stream
// leader answers. ErrNoKey means no such message.
func leaderGet(ctx context.Context, js jetstream.JetStream, stream string, request map[string]any) (*jetstream.RawStreamMsg, error) {
	subject, _ := request["last_by_subj"].(string)
	if subject == "" {
		subject, _ = request["next_by_subj"].(string)
	}
	o := js.Options()
	api := subjects.APIPrefix(o.Domain)
	if o.APIPrefix != "" {
		api = strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	if _, ok := ctx.Deadline(); !ok && o.DefaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DefaultTimeout)
		defer cancel()
	}
	req, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	reply, err := js.Conn().RequestWithContext(ctx, api+"STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("leader read of %q in stream %q: %w", subject, stream, err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("leader read of %q in stream %q: bad reply: %w", subject, stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == codeMsgNotFound {
			return nil, ErrNoKey
		}
		return nil, fmt.Errorf("leader read of %q in stream %q: %w", subject, stream, resp.Error)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("leader read of %q in stream %q: %w", subject, stream, jetstream.ErrInvalidJetStreamResponse)
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence, Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("leader read of %q in stream %q: bad headers: %w", subject, stream, err)
		}
	}
	return m, nil
}

// Scan calls fn with the current value of every key matching filter, in
// one pass of an ordered consumer (no request per key).
func (b *Bucket) Scan(ctx context.Context, filter string, fn func(jetstream.KeyValueEntry)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.kv.Watch(wctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("kvstore: scan bucket %q for %q: %w", b.name, filter, err)
	}
	defer func() {
		_ = w.Stop()
		// The watcher's callback blocks on a full channel; drain it so
		// that the subscription can close.
		go func() {
			for range w.Updates() { //nolint:revive // draining
			}
		}()
	}()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("kvstore: scan bucket %q for %q: watcher closed", b.name, filter)
			}
			if e == nil { // every current value has been delivered
				return nil
			}
			fn(e)
		case <-ctx.Done():
			return fmt.Errorf("kvstore: scan bucket %q for %q: %w", b.name, filter, ctx.Err())
		}
	}
}

func checkNames(names subjects.Names) error {
	if names.Prefix() == "" {
		return errors.New("kvstore: subjects.Names is the zero value; build it with subjects.New")
	}
	return nil
}

// NextOnSubject returns the first message on subject (a pattern) at or
// after sequence seq in stream, read through the stream leader; the
// error wraps ErrNoKey when there is none. A caller maps a time to a
// stream sequence with it (client.Matcher's start-time bounds).
func NextOnSubject(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, js, stream, map[string]any{"seq": seq, "next_by_subj": subject})
}
