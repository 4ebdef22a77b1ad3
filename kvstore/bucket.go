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

// bucket is a bound KV bucket plus what a leader read needs: the backing
// stream and the subject prefix of its keys.
type bucket struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	name   string
	stream string
	prefix string // "$KV.<bucket>."
}

func bindBucket(ctx context.Context, js jetstream.JetStream, names subjects.Names, name string) (*bucket, error) {
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
	b := &bucket{js: js, kv: kv, name: name, stream: names.KVStream(name), prefix: names.KVKeyPrefix(name)}
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

// entry is one key's current value.
type entry struct {
	value    []byte
	revision uint64
	created  time.Time
}

// errNoKey is returned by get for an absent or deleted key; callers wrap
// their own sentinel around it.
var errNoKey = jetstream.ErrKeyNotFound

// get reads key. fromLeader reads through the stream leader (the
// non-direct message API) instead of a direct get, which any replica may
// answer from behind: use it to read your own or another writer's latest
// write on a replicated bucket. Errors a cluster gives while it elects a
// leader or a restarted node rejoins ("no responders") are retried with
// backoff for up to readRetryFor.
func (b *bucket) get(ctx context.Context, key string, fromLeader bool) (entry, error) {
	return retry(ctx, readRetryFor, func() (entry, error) {
		e, err := b.getOnce(ctx, key, fromLeader)
		if err != nil && !readTransient(err) {
			return e, permanent(err)
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

func (b *bucket) getOnce(ctx context.Context, key string, fromLeader bool) (entry, error) {
	if !fromLeader {
		e, err := b.kv.Get(ctx, key)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
				return entry{}, errNoKey
			}
			return entry{}, err
		}
		return entry{value: e.Value(), revision: e.Revision(), created: e.Created()}, nil
	}
	m, err := b.leaderLast(ctx, b.prefix+key)
	if err != nil {
		return entry{}, err
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return entry{}, errNoKey
	}
	return entry{value: m.Data, revision: m.Sequence, created: m.Time}, nil
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
func (b *bucket) leaderLast(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, b.js, b.stream, map[string]any{"last_by_subj": subject})
}

// FirstOnSubject returns the stream sequence of the first message on
// subject in stream, 0 when it holds none, read through the stream
// leader: a replica that lags would answer "none" for a message already
// stored, and a caller that refuses an input on that answer would lose it.
func FirstOnSubject(ctx context.Context, js jetstream.JetStream, stream, subject string) (uint64, error) {
	m, err := leaderGet(ctx, js, stream, map[string]any{"seq": 1, "next_by_subj": subject})
	if errors.Is(err, errNoKey) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// leaderGet is one $JS.API.STREAM.MSG.GET request, which the stream
// leader answers. errNoKey means no such message.
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
			return nil, errNoKey
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

// scan calls fn with the current value of every key matching filter, in
// one pass of an ordered consumer (no request per key).
func (b *bucket) scan(ctx context.Context, filter string, fn func(jetstream.KeyValueEntry)) error {
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
