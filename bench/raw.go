package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/provision"
)

// Raw operation names, and the sizes they write (a run record and an
// input are of this order).
const (
	rawPublish   = "js.publish"
	rawKVCreate  = "kv.create"
	rawKVUpdate  = "kv.update (revision-conditioned)"
	rawConsume   = "consume+ack (limits)"
	rawConsumeWQ = "consume+ack (work queue)"
	rawHop       = "publish-consume hop"
	rawParallel  = 16
	// rawWide is as many at once as a dispatcher steps by default: at 16
	// alone a dispatcher of 128 outran the bound (1.22 of it on
	// 2026-12-05), and 128 got 1.2-1.9 times 16's rates from the same
	// server.
	rawWide       = dispatcher.DefaultConcurrency
	rawMsgBytes   = 256
	rawValueBytes = 512
	// rawStream and friends are the raw measurement's own names, apart
	// from jetflow's.
	rawStream   = "RAWBENCH"
	rawStreamWQ = "RAWBENCH_WQ"
	rawBucket   = "rawbench"
)

// rawBench measures raw JetStream operations on the server at url, with
// the same connection type and replicas as jetflow in the setup.
type rawBench struct {
	js       jetstream.JetStream
	replicas int
	ops      int
	dur      time.Duration
}

// measureRaw measures every raw operation the bound needs.
func measureRaw(ctx context.Context, url string, replicas, ops int, dur time.Duration) ([]RawOp, error) {
	nc, err := nats.Connect(url, nats.Name("jetflow-bench-raw"))
	if err != nil {
		return nil, fmt.Errorf("bench: raw: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	rb := &rawBench{js: js, replicas: replicas, ops: ops, dur: dur}
	out, err := rb.all(ctx)
	// The raw streams are the bench's, not the deployment's.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = js.DeleteStream(cctx, rawStream)
	_ = js.DeleteStream(cctx, rawStreamWQ)
	_ = js.DeleteKeyValue(cctx, rawBucket)
	if err != nil {
		return nil, fmt.Errorf("bench: raw: %w", err)
	}
	return out, nil
}

func (rb *rawBench) all(ctx context.Context) ([]RawOp, error) {
	js := rb.js
	for _, sc := range []jetstream.StreamConfig{
		{Name: rawStream, Subjects: []string{"rawbench.>"}, Replicas: rb.replicas, Storage: jetstream.FileStorage},
		{Name: rawStreamWQ, Subjects: []string{"rawbenchwq.>"}, Replicas: rb.replicas, Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy},
	} {
		if _, err := js.CreateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("create stream %s: %w", sc.Name, err)
		}
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: rawBucket, History: 1, Replicas: rb.replicas, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("create bucket %s: %w", rawBucket, err)
	}
	msg, value := make([]byte, rawMsgBytes), make([]byte, rawValueBytes)
	var out []RawOp
	add := func(op RawOp, err error) error {
		out = append(out, op)
		return err
	}
	publish := func(ctx context.Context, _, i int) error {
		_, err := js.Publish(ctx, "rawbench.pub."+strconv.Itoa(i%1024), msg)
		return err
	}
	var created atomic.Int64
	create := func(ctx context.Context, _, _ int) error {
		_, err := kv.Create(ctx, "c"+strconv.FormatInt(created.Add(1), 10), value)
		return err
	}
	// One key per goroutine, its revision cached as a dispatcher caches
	// the revision its own write returned.
	revs := make([]uint64, max(rawParallel, rawWide))
	for g := range revs {
		if revs[g], err = kv.Put(ctx, "u"+strconv.Itoa(g), value); err != nil {
			return nil, fmt.Errorf("put u%d: %w", g, err)
		}
	}
	update := func(ctx context.Context, g, _ int) error {
		key := "u" + strconv.Itoa(g)
		for range 10 {
			rev, err := kv.Update(ctx, key, value, revs[g])
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				revs[g] = rev
				return err
			}
			// A cluster refuses the check while another write to the
			// stream is in flight (10164); jetflow sees the same.
			e, err := kv.Get(ctx, key)
			if err != nil {
				return err
			}
			revs[g] = e.Revision()
		}
		return fmt.Errorf("update %s: 10 revision mismatches in a row", key)
	}
	steps := []struct {
		name string
		c    int
		fn   func(context.Context, int, int) error
	}{
		{rawPublish, 1, publish},
		{rawPublish, rawParallel, publish},
		{rawPublish, rawWide, publish},
		{rawKVCreate, 1, create},
		{rawKVCreate, rawParallel, create},
		{rawKVCreate, rawWide, create},
		{rawKVUpdate, 1, update},
		{rawKVUpdate, rawParallel, update},
		{rawKVUpdate, rawWide, update},
	}
	for _, s := range steps {
		if err := add(rb.closed(ctx, s.name, s.c, s.fn)); err != nil {
			return out, err
		}
	}
	if err := add(rb.consume(ctx, rawConsume, rawStream, "rawbench.cons", msg)); err != nil {
		return out, err
	}
	if err := add(rb.consume(ctx, rawConsumeWQ, rawStreamWQ, "rawbenchwq.cons", msg)); err != nil {
		return out, err
	}
	return out, add(rb.hop(ctx, msg))
}

// rawRounds is how many times each rate is measured; the best counts,
// since the bound is the best the raw operations allow and a neighbour's
// burst only ever slows a round down.
const rawRounds = 3

// closed measures fn from c goroutines in rawRounds rounds, each of
// rb.ops/rawRounds calls or rb.dur/rawRounds, and keeps the best rate.
// Calls one at a time (c == 1) measure latency, so they are a quarter as
// many; their percentiles span every round.
func (rb *rawBench) closed(ctx context.Context, name string, c int, fn func(ctx context.Context, g, i int) error) (RawOp, error) {
	n, dur := rb.ops, rb.dur
	if c == 1 {
		n, dur = max(1, n/4), dur/2
	}
	op := RawOp{Name: name, Concurrency: c}
	var all []time.Duration
	for range rawRounds {
		samples, elapsed, err := rb.round(ctx, name, c, max(1, n/rawRounds), dur/rawRounds, fn)
		if err != nil {
			return op, err
		}
		all = append(all, samples...)
		op.N += len(samples)
		op.PerSec = max(op.PerSec, float64(len(samples))/elapsed.Seconds())
	}
	if c == 1 {
		l := latencyOf(all)
		op.P50us, op.P99us = l.P50*1000, l.P99*1000
	}
	return op, nil
}

// round calls fn from c goroutines until n calls or dur, timing each.
func (rb *rawBench) round(ctx context.Context, name string, c, n int, dur time.Duration, fn func(ctx context.Context, g, i int) error) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	samples := make([]time.Duration, 0, n)
	errc := make(chan error, c)
	var wg sync.WaitGroup
	began := time.Now()
	deadline := began.Add(dur)
	for g := range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || time.Now().After(deadline) {
					return
				}
				t := time.Now()
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := fn(actx, g, i)
				cancel()
				if err != nil {
					errc <- fmt.Errorf("%s: %w", name, err)
					return
				}
				d := time.Since(t)
				mu.Lock()
				samples = append(samples, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(errc)
	if err := <-errc; err != nil {
		return nil, 0, err
	}
	return samples, elapsed, nil
}

// consume measures consuming and acknowledging a pre-filled stream in
// rawRounds rounds and keeps the best rate.
func (rb *rawBench) consume(ctx context.Context, name, stream, subject string, msg []byte) (RawOp, error) {
	op := RawOp{Name: name, Concurrency: 1}
	for range rawRounds {
		n, rate, err := rb.consumeRound(ctx, stream, subject, msg, max(1, rb.ops/rawRounds))
		op.N += n
		op.PerSec = max(op.PerSec, rate)
		if err != nil {
			return op, fmt.Errorf("%s: %w", name, err)
		}
	}
	return op, nil
}

func (rb *rawBench) consumeRound(ctx context.Context, stream, subject string, msg []byte, n int) (int, float64, error) {
	// Each round consumes only its own messages.
	st, err := rb.js.Stream(ctx, stream)
	if err == nil {
		err = st.Purge(ctx, jetstream.WithPurgeSubject(subject))
	}
	if err != nil {
		return 0, 0, err
	}
	for i := range n {
		if _, err := rb.js.PublishAsync(subject, msg); err != nil {
			return 0, 0, err
		}
		// Below nats.go's cap of 4,000 unacknowledged publishes, past
		// which a publish fails after a short stall: a synced disk acks
		// slowly enough for that (--durability fsync at the default
		// --raw-ops failed so).
		if i%1024 == 1023 {
			<-rb.js.PublishAsyncComplete()
		}
	}
	select {
	case <-rb.js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, 0, context.Cause(ctx)
	}
	cons, err := rb.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: "rawbench", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4096,
	})
	if err != nil {
		return 0, 0, err
	}
	var got atomic.Int64
	done := make(chan struct{})
	began := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if got.Add(1) == int64(n) {
			close(done)
		}
	}, jetstream.PullMaxMessages(1024), jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat))
	if err != nil {
		return 0, 0, err
	}
	select {
	case <-done:
	case <-time.After(rb.dur + 30*time.Second):
	case <-ctx.Done():
	}
	elapsed := time.Since(began)
	cc.Stop()
	<-cc.Closed()
	consumed := int(got.Load())
	if consumed < n {
		return consumed, 0, fmt.Errorf("consumed %d of %d", consumed, n)
	}
	return consumed, float64(consumed) / elapsed.Seconds(), rb.dropConsumer(ctx, stream, "rawbench")
}

// dropConsumer deletes a bench consumer. The server may answer a delete
// with an error from the consumer's last state write racing its own
// removal (rename of o.dat.tmp: no such file) although the consumer is
// gone: only a consumer still there is an error.
func (rb *rawBench) dropConsumer(ctx context.Context, stream, name string) error {
	err := rb.js.DeleteConsumer(ctx, stream, name)
	if err == nil {
		return nil
	}
	if _, ierr := rb.js.Consumer(ctx, stream, name); errors.Is(ierr, jetstream.ErrConsumerNotFound) {
		return nil
	}
	return fmt.Errorf("delete bench consumer %s on %s: %w", name, stream, err)
}

// hop times one message at a time from the start of its publish to its
// delivery to a consumer, which acknowledges it.
func (rb *rawBench) hop(ctx context.Context, msg []byte) (RawOp, error) {
	op := RawOp{Name: rawHop, Concurrency: 1}
	cons, err := rb.js.CreateConsumer(ctx, rawStream, jetstream.ConsumerConfig{
		Durable: "rawbench-hop", FilterSubject: "rawbench.hop", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return op, err
	}
	arrived := make(chan time.Time, 1)
	// A 1 s heartbeat: on a cluster a pull sent just after the consumer
	// was created can be dropped without a word (CI saw the hop wait
	// past 10 s), and nats.go pulls again after two missed heartbeats.
	cc, err := cons.Consume(func(m jetstream.Msg) {
		at := time.Now()
		_ = m.Ack()
		arrived <- at
	}, jetstream.PullExpiry(provision.PullExpiry), jetstream.PullHeartbeat(provision.PullHeartbeat))
	if err != nil {
		return op, err
	}
	defer func() { cc.Stop(); <-cc.Closed() }()
	n := max(1, rb.ops/4)
	deadline := time.Now().Add(rb.dur / 2)
	samples := make([]time.Duration, 0, n)
	began := time.Now()
	for range n {
		if time.Now().After(deadline) {
			break
		}
		t := time.Now()
		if _, err := rb.js.Publish(ctx, "rawbench.hop", msg); err != nil {
			return op, err
		}
		select {
		case at := <-arrived:
			samples = append(samples, at.Sub(t))
		case <-time.After(10 * time.Second):
			return op, fmt.Errorf("%s: a message was not delivered within 10s", rawHop)
		}
	}
	l := latencyOf(samples)
	op.N, op.PerSec = len(samples), float64(len(samples))/time.Since(began).Seconds()
	op.P50us, op.P99us = l.P50*1000, l.P99*1000
	return op, nil
}
