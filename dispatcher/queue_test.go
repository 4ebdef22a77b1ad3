package dispatcher

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// TestKeyRingRoundRobin: within a priority, keys take turns, each FIFO,
// and a key at its limit is passed over without losing its turn order.
func TestKeyRingRoundRobin(t *testing.T) {
	t.Parallel()
	var r keyRing
	seq := uint64(0)
	add := func(key string, limit int) {
		seq++
		r.push(&queued{seq: seq, key: key, limit: limit})
	}
	for range 4 {
		add("big", 0)
	}
	add("a", 0)
	add("b", 1)
	add("a", 0)
	var got []uint64
	blockB := true
	for {
		q := r.pop(func(key string, limit int) bool { return key == "b" && blockB })
		if q == nil {
			break
		}
		got = append(got, q.seq)
	}
	want := []uint64{1, 5, 2, 7, 3, 4}
	if len(got) != len(want) {
		t.Fatalf("popped %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("popped %v, want %v", got, want)
		}
	}
	blockB = false
	if q := r.pop(func(string, int) bool { return false }); q == nil || q.seq != 6 {
		t.Fatalf("the blocked key's invocation once free: %+v", q)
	}
	if len(r.keys) != 0 || len(r.waiting) != 0 {
		t.Fatalf("an empty ring keeps %v %v", r.keys, r.waiting)
	}
}

// TestQueuePublishErrorNamesTheFix: a queued invocation's publish into a
// deployment provisioned before queues says which stream is missing and
// how to get it.
func TestQueuePublishErrorNamesTheFix(t *testing.T) {
	t.Parallel()
	names := subjects.Must("t")
	p := publisher{names: names}
	err := p.publishError(names.Queue("ship", "1", 3, subjects.NoKey), jetstream.ErrNoStreamResponse)
	if !errors.Is(err, jetstream.ErrNoStreamResponse) || !strings.Contains(err.Error(), `"t_queue" is not provisioned`) || !strings.Contains(err.Error(), "provision again") {
		t.Fatalf("error %v", err)
	}
	if err := p.publishError(names.Task("ship", "1"), jetstream.ErrNoStreamResponse); strings.Contains(err.Error(), "queue") {
		t.Fatalf("a task publish blames the queue: %v", err)
	}
}

// TestAdmissionBindsItsStreamsLater: a dispatcher that starts while the
// queue stream does not answer (here: not there yet) binds it once it
// does, rather than admitting nothing until a restart. A chaos run saw
// a dispatcher restarted during a NATS fault give up on its queues for
// good, and every queued task of the partitions it owned time out.
func TestAdmissionBindsItsStreamsLater(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := testCtx(t)
	if err := b.js.DeleteStream(ctx, b.names.QueueStream()); err != nil {
		t.Fatal(err)
	}
	d := b.dispatcher(t, Config{})
	time.Sleep(bindRetry / 2)
	if d.adm.bound.Load() {
		t.Fatal("admission bound a queue stream that does not exist")
	}
	b.provision(t, provision.ProvisionOptions{})
	natstest.WaitFor(t, 3*bindRetry, "admission bound to the queue stream provisioned after the start", func() error {
		if !d.adm.bound.Load() {
			return errors.New("not bound")
		}
		return nil
	})
}
