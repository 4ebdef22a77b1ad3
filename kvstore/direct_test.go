package kvstore_test

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
)

// lossyResponder answers direct gets on stream "S" as a replica would,
// except that it drops the replies named by lose (by request count,
// from 1): as a reconnect drops what was in flight.
func lossyResponder(t *testing.T, nc *nats.Conn, lose func(n int64, req string) bool) *atomic.Int64 {
	t.Helper()
	var count atomic.Int64
	_, err := nc.Subscribe("$JS.API.DIRECT.GET.S", func(m *nats.Msg) {
		n := count.Add(1)
		if lose(n, string(m.Data)) {
			return
		}
		r := nats.NewMsg(m.Reply)
		r.Header.Set(jetstream.SequenceHeader, "7")
		r.Header.Set(jetstream.SubjectHeader, "a.b")
		r.Data = []byte("v" + strconv.FormatInt(n, 10))
		_ = nc.PublishMsg(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The reads come on another connection: the server must hold the
	// subscription before the first, or it answers 503, no responders.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &count
}

// TestDirectGetAsksAgainWhenItsReplyIsLost: a read whose one reply was
// lost is sent again and answered, where it used to wait until its
// context ended.
func TestDirectGetAsksAgainWhenItsReplyIsLost(t *testing.T) {
	t.Parallel()
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	count := lossyResponder(t, nc, func(n int64, _ string) bool { return n == 1 })
	js := natstest.JetStream(t, natstest.Conn(t, s))
	ctx := testCtx(t, 20*time.Second)
	m, err := kvstore.DirectLast(ctx, js, "S", "a.b")
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "v2" || count.Load() != 2 {
		t.Fatalf("got %q after %d requests, want the second request's reply", m.Data, count.Load())
	}
}

// TestDirectBatchCutShortIsAnError: a batch whose end never comes is
// an error naming how far it got, not a wait to the context's end and
// not a second request (its first part has been handed on).
func TestDirectBatchCutShortIsAnError(t *testing.T) {
	t.Parallel()
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	// One message, then no end of batch.
	count := lossyResponder(t, nc, func(int64, string) bool { return false })
	js := natstest.JetStream(t, natstest.Conn(t, s))
	ctx := testCtx(t, 30*time.Second)
	start := time.Now()
	n, err := kvstore.DirectBatch(ctx, js, "S", "a.>", 1, 10, func(*jetstream.RawStreamMsg) {})
	if err == nil || n != 1 || count.Load() != 1 {
		t.Fatalf("got %d messages, %d requests, error %v; want 1, 1 and an error", n, count.Load(), err)
	}
	if errors.Is(err, ctx.Err()) || time.Since(start) > 10*time.Second {
		t.Fatalf("waited %s for %v", time.Since(start), err)
	}
}

// TestDirectSeqsAsksAgainForLostReplies: of pipelined reads, those
// whose replies were lost are sent again; each message is handed on
// once, in the order asked.
func TestDirectSeqsAsksAgainForLostReplies(t *testing.T) {
	t.Parallel()
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	count := lossyResponder(t, nc, func(n int64, _ string) bool { return n == 2 || n == 3 })
	js := natstest.JetStream(t, natstest.Conn(t, s))
	ctx := testCtx(t, 20*time.Second)
	var got int
	if err := kvstore.DirectSeqs(ctx, js, "S", []uint64{1, 2, 3, 4}, func(*jetstream.RawStreamMsg) { got++ }); err != nil {
		t.Fatal(err)
	}
	if got != 4 || count.Load() != 6 {
		t.Fatalf("handed on %d of 4 after %d requests, want 4 after 6", got, count.Load())
	}
}
