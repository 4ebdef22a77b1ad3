package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/subjects"
)

// LastOnSubject returns the last message on subject (a literal subject)
// in stream, read through the stream leader; the error wraps ErrNoKey
// when there is none.
func LastOnSubject(ctx context.Context, js jetstream.JetStream, stream, subject string) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, js, stream, map[string]any{"last_by_subj": subject})
}

// DirectBatch reads, with one batched direct get (answered by any
// replica of a stream with AllowDirect), up to batch messages on filter
// (a subject pattern) from sequence seq on, and calls fn with each in
// stream order. It returns how many it read: fewer than batch means
// there are no more.
func DirectBatch(ctx context.Context, js jetstream.JetStream, stream, filter string, seq uint64, batch int, fn func(*jetstream.RawStreamMsg)) (int, error) {
	req := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%q,"batch":%d}`, max(seq, 1), filter, batch)
	n, err := direct(ctx, js, stream, req, batch, fn)
	if err != nil {
		return n, fmt.Errorf("direct get of %q in stream %q from %d: %w", filter, stream, seq, err)
	}
	return n, nil
}

// DirectNext returns the first message on subject (a literal subject or
// a pattern) at or after sequence seq in stream with a direct get,
// answered by any replica (so it may lag the leader); the error wraps
// ErrNoKey when there is none. Unlike a batch of one, the server counts
// nothing for it.
func DirectNext(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, subject string) (*jetstream.RawStreamMsg, error) {
	var got *jetstream.RawStreamMsg
	req := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%q}`, max(seq, 1), subject)
	if _, err := direct(ctx, js, stream, req, 1, func(m *jetstream.RawStreamMsg) { got = m }); err != nil {
		return nil, fmt.Errorf("direct get of %q in stream %q from %d: %w", subject, stream, seq, err)
	}
	if got == nil {
		return nil, fmt.Errorf("direct get of %q in stream %q from %d: %w", subject, stream, seq, ErrNoKey)
	}
	return got, nil
}

// DirectLast returns the last message on subject (literal) in stream
// with a direct get, answered by any replica (so it may lag the leader);
// the error wraps ErrNoKey when there is none.
func DirectLast(ctx context.Context, js jetstream.JetStream, stream, subject string) (*jetstream.RawStreamMsg, error) {
	var got *jetstream.RawStreamMsg
	req := fmt.Appendf(nil, `{"last_by_subj":%q}`, subject)
	if _, err := direct(ctx, js, stream, req, 1, func(m *jetstream.RawStreamMsg) { got = m }); err != nil {
		return nil, fmt.Errorf("direct get of %q in stream %q: %w", subject, stream, err)
	}
	if got == nil {
		return nil, fmt.Errorf("direct get of %q in stream %q: %w", subject, stream, ErrNoKey)
	}
	return got, nil
}

// MaxDirectLasts is how many subjects one DirectLasts may name.
const MaxDirectLasts = 1024

// ErrTooManyResults: a DirectLasts would return more than
// MaxDirectLasts messages.
var ErrTooManyResults = errors.New("too many results")

// DirectLasts reads the last message of each subject that subjects (at
// most MaxDirectLasts, patterns allowed) match, stored at or below
// sequence upTo (0: any), with one direct get, and calls fn with each.
// More than MaxDirectLasts such subjects is an error wrapping
// ErrTooManyResults, and fn is not called.
func DirectLasts(ctx context.Context, js jetstream.JetStream, stream string, subjects []string, upTo uint64, fn func(*jetstream.RawStreamMsg)) error {
	if len(subjects) == 0 {
		return nil
	}
	req, err := json.Marshal(map[string]any{"multi_last": subjects, "batch": MaxDirectLasts, "up_to_seq": upTo})
	if err != nil {
		return err
	}
	if _, err := direct(ctx, js, stream, req, MaxDirectLasts, fn); err != nil {
		return fmt.Errorf("direct get of the last of %d subjects in stream %q: %w", len(subjects), stream, err)
	}
	return nil
}

// numPendingHeader counts, on a batch's closing message, the messages
// the batch left unsent.
const numPendingHeader = "Nats-Num-Pending"

// DirectLastsAll is DirectLasts over the whole stream as the answering
// replica holds it, and reports whether the answer is whole: false when
// the server cut the batch short (its byte limit), so that a subject
// missing from it may still have messages.
func DirectLastsAll(ctx context.Context, js jetstream.JetStream, stream string, subjects []string, fn func(*jetstream.RawStreamMsg)) (bool, error) {
	if len(subjects) == 0 {
		return true, nil
	}
	req, err := json.Marshal(map[string]any{"multi_last": subjects, "batch": MaxDirectLasts})
	if err != nil {
		return false, err
	}
	var pending string
	eob := func(m *nats.Msg) { pending = m.Header.Get(numPendingHeader) }
	if _, err := directEnd(ctx, js, stream, req, MaxDirectLasts, fn, eob); err != nil {
		return false, fmt.Errorf("direct get of the last of %d subjects in stream %q: %w", len(subjects), stream, err)
	}
	return pending == "" || pending == "0", nil
}

// direct sends one $JS.API.DIRECT.GET request and reads its replies up
// to the end of the batch: at most limit messages (1: a request that is
// not a batch, answered by one reply).
func direct(ctx context.Context, js jetstream.JetStream, stream string, req []byte, limit int, fn func(*jetstream.RawStreamMsg)) (int, error) {
	return directEnd(ctx, js, stream, req, limit, fn, nil)
}

// replyStall bounds the wait for a direct get's next reply. Replies
// normally follow within a millisecond; one lost to a reconnect (the
// server drops a slow client's connection, and what was in flight with
// it) would otherwise hold the read until ctx ends.
const replyStall = 2 * time.Second

// errNoReply: a direct get's next reply did not come within replyStall.
var errNoReply = errors.New("no reply")

// directEnd is direct that also hands eob (when not nil) the batch's
// closing status message. A request that got no reply at all is sent
// again until ctx ends; one whose batch stopped part way is an error,
// since fn has seen its first part.
func directEnd(ctx context.Context, js jetstream.JetStream, stream string, req []byte, limit int, fn func(*jetstream.RawStreamMsg), eob func(*nats.Msg)) (int, error) {
	if o := js.Options(); o.DefaultTimeout > 0 {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.DefaultTimeout)
			defer cancel()
		}
	}
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(10*time.Millisecond), backoff.WithMaxInterval(time.Second), backoff.WithMaxElapsedTime(0)), ctx)
	var last error
	n, err := backoff.RetryWithData(func() (int, error) {
		n, err := directOnce(ctx, js, stream, req, limit, fn, eob)
		if errors.Is(err, errNoReply) && n == 0 {
			last = err
			return 0, err
		}
		return n, backoff.Permanent(err)
	}, b)
	if err != nil && last != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, last)
	}
	return n, err
}

// directOnce sends the request once and reads its replies.
func directOnce(ctx context.Context, js jetstream.JetStream, stream string, req []byte, limit int, fn func(*jetstream.RawStreamMsg), eob func(*nats.Msg)) (int, error) {
	single := limit == 1
	nc := js.Conn()
	inbox := nc.NewRespInbox()
	// Room for every reply and the batch's end, and no more: a
	// SubscribeSync would allocate nats.go's 64K-message channel (512 KB)
	// for each request.
	replies := make(chan *nats.Msg, limit+1)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(subjects.APIPrefix(js.Options().Domain)+"DIRECT.GET."+stream, inbox, req); err != nil {
		return 0, err
	}
	stall := time.NewTimer(replyStall)
	defer stall.Stop()
	n := 0
	for {
		var m *nats.Msg
		select {
		case m = <-replies:
			stall.Reset(replyStall)
		case <-stall.C:
			dropped, _ := sub.Dropped()
			return n, fmt.Errorf("%w within %s after %d replies (%d dropped)", errNoReply, replyStall, n, dropped)
		case <-ctx.Done():
			return n, ctx.Err()
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404", "408", "204":
			if eob != nil {
				eob(m)
			}
			return n, nil // nothing (more), or the end of the batch
		case "413":
			return n, ErrTooManyResults
		default:
			return n, fmt.Errorf("status %s %s", status, m.Header.Get("Description"))
		}
		msg, err := directMsg(m)
		if err != nil {
			return n, err
		}
		n++
		fn(msg)
		if single {
			return n, nil
		}
	}
}

func directMsg(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, errors.New("reply without a sequence")
	}
	t, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	return &jetstream.RawStreamMsg{Subject: m.Header.Get(jetstream.SubjectHeader), Sequence: seq, Header: m.Header, Data: m.Data, Time: t}, nil
}

// DirectSeqs reads the messages at each of seqs with pipelined direct
// gets (no batch: the server then counts nothing) and calls fn with each
// that exists, in the order of seqs.
func DirectSeqs(ctx context.Context, js jetstream.JetStream, stream string, seqs []uint64, fn func(*jetstream.RawStreamMsg)) error {
	if len(seqs) == 0 {
		return nil
	}
	o := js.Options()
	api := subjects.APIPrefix(o.Domain) + "DIRECT.GET." + stream
	if _, ok := ctx.Deadline(); !ok && o.DefaultTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DefaultTimeout)
		defer cancel()
	}
	nc := js.Conn()
	inbox := nc.NewRespInbox()
	replies := make(chan *nats.Msg, len(seqs))
	sub, err := nc.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return fmt.Errorf("direct get of %d messages in stream %q: %w", len(seqs), stream, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	send := func(i int) error {
		return nc.PublishRequest(api, inbox+"."+strconv.Itoa(i), fmt.Appendf(nil, `{"seq":%d}`, seqs[i]))
	}
	for i := range seqs {
		if err := send(i); err != nil {
			return fmt.Errorf("direct get of %d messages in stream %q: %w", len(seqs), stream, err)
		}
	}
	got := make([]*jetstream.RawStreamMsg, len(seqs))
	answered := make([]bool, len(seqs))
	stall := time.NewTimer(replyStall)
	defer stall.Stop()
	for left := len(seqs); left > 0; {
		select {
		case m := <-replies:
			stall.Reset(replyStall)
			i, err := strconv.Atoi(m.Subject[len(inbox)+1:])
			if err != nil || i < 0 || i >= len(got) || answered[i] {
				continue
			}
			answered[i] = true
			left--
			if m.Header.Get("Status") != "" {
				continue // deleted or never stored
			}
			if got[i], err = directMsg(m); err != nil {
				return fmt.Errorf("direct get of %d messages in stream %q: %w", len(seqs), stream, err)
			}
		case <-stall.C:
			// Replies lost to a reconnect: ask again for those missing.
			for i, ok := range answered {
				if !ok {
					if err := send(i); err != nil {
						return fmt.Errorf("direct get of %d messages in stream %q: %w", len(seqs), stream, err)
					}
				}
			}
			stall.Reset(replyStall)
		case <-ctx.Done():
			return fmt.Errorf("direct get of %d messages in stream %q: %d unanswered: %w", len(seqs), stream, left, ctx.Err())
		}
	}
	for _, m := range got {
		if m != nil {
			fn(m)
		}
	}
	return nil
}
