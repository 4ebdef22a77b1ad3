package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// counts are the server-side counters a phase is measured by: what the
// streams and consumers hold and have delivered.
type counts struct {
	inputSeq, inputBytes uint64
	taskSeq, taskBytes   uint64
	kvSeq, kvBytes       uint64
	// timerSeq and indexSeq count what the dispatchers store besides the
	// record and the invocations: timer schedules and disarms, retention's
	// due entries, the run index's entries and heads.
	timerSeq, indexSeq uint64
	// dispatched and served count deliveries to the dispatchers and to
	// the workers, redeliveries included; indexed, the record changes
	// delivered to the dispatchers' indexers.
	dispatched, served, indexed uint64
	// pending is what the consumers have not delivered or not seen
	// acknowledged yet.
	pending int
	api     uint64
}

// observe reads the counters.
func (d *driver) observe(ctx context.Context) (counts, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var c counts
	n := d.names
	for _, s := range []struct {
		name        string
		seq, nbytes *uint64
	}{
		{n.InputStream(), &c.inputSeq, &c.inputBytes},
		{n.TaskStream(), &c.taskSeq, &c.taskBytes},
		{n.KVStream(n.RunBucket()), &c.kvSeq, &c.kvBytes},
		{n.TimerStream(), &c.timerSeq, nil},
		{n.IndexStream(), &c.indexSeq, nil},
	} {
		st, err := d.js.Stream(ctx, s.name)
		if err != nil {
			return c, fmt.Errorf("bench: stream %s: %w", s.name, err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			return c, fmt.Errorf("bench: stream %s: %w", s.name, err)
		}
		*s.seq = info.State.LastSeq
		if s.nbytes != nil {
			*s.nbytes = info.State.Bytes
		}
	}
	// The dispatchers' consumers: the shared one, or one per partition.
	in, err := d.js.Stream(ctx, n.InputStream())
	if err != nil {
		return c, fmt.Errorf("bench: stream %s: %w", n.InputStream(), err)
	}
	var dispatchers []string
	lister := in.ConsumerNames(ctx)
	for name := range lister.Name() {
		if n.IsDispatcherConsumer(name) {
			dispatchers = append(dispatchers, name)
		}
	}
	if err := lister.Err(); err != nil {
		return c, fmt.Errorf("bench: consumers of %s: %w", n.InputStream(), err)
	}
	type consumer struct {
		stream, consumer string
		delivered        *uint64
		optional         bool // absent is none delivered
	}
	consumers := []consumer{{stream: n.TaskStream(), consumer: n.TaskConsumer(echoTask, echoVersion), delivered: &c.served}}
	for _, name := range dispatchers {
		consumers = append(consumers, consumer{stream: n.InputStream(), consumer: name, delivered: &c.dispatched})
	}
	// No indexer with --index=false, nor before a dispatcher made it.
	consumers = append(consumers, consumer{stream: n.KVStream(n.RunBucket()), consumer: n.IndexerConsumer(), delivered: &c.indexed, optional: true})
	for _, cn := range consumers {
		info, err := consumerInfo(ctx, d.js, cn.stream, cn.consumer)
		if cn.optional && errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return c, err
		}
		*cn.delivered += info.Delivered.Consumer
		c.pending += int(info.NumPending) + info.NumAckPending
	}
	ai, err := d.js.AccountInfo(ctx)
	if err != nil {
		return c, fmt.Errorf("bench: account info: %w", err)
	}
	c.api = ai.API.Total
	return c, nil
}

func consumerInfo(ctx context.Context, js jetstream.JetStream, stream, name string) (*jetstream.ConsumerInfo, error) {
	cons, err := js.Consumer(ctx, stream, name)
	if err != nil {
		return nil, fmt.Errorf("bench: consumer %s of %s: %w", name, stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: consumer %s of %s: %w", name, stream, err)
	}
	return info, nil
}

// quiesce waits until the consumers have nothing pending, so that a
// phase's counters hold all of its work and none of the next's. It gives
// up when the pending count has not fallen for the driver's timeout (the
// indexers of 100,000 parked runs take longer than that in all).
func (d *driver) quiesce(ctx context.Context) (counts, error) {
	deadline := time.Now().Add(d.timeout)
	least := -1
	for {
		c, err := d.observe(ctx)
		if err != nil || c.pending == 0 {
			return c, err
		}
		if least < 0 || c.pending < least {
			least, deadline = c.pending, time.Now().Add(d.timeout)
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("bench: %d inputs, invocations or record changes still pending, none done in %s", c.pending, d.timeout)
		}
		select {
		case <-ctx.Done():
			return c, context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// opsPerRun divides the counters' growth between a and b by runs.
func opsPerRun(a, b counts, runs, starts int) Ops {
	if runs <= 0 {
		return Ops{}
	}
	per := func(x, y uint64) float64 { return (float64(y) - float64(x)) / float64(runs) }
	o := Ops{
		InputPublishes: per(a.inputSeq, b.inputSeq),
		TaskPublishes:  per(a.taskSeq, b.taskSeq),
		TimerPublishes: per(a.timerSeq, b.timerSeq),
		IndexPublishes: per(a.indexSeq, b.indexSeq),
		Indexed:        per(a.indexed, b.indexed),
		KVCreates:      float64(starts) / float64(runs),
		Dispatched:     per(a.dispatched, b.dispatched),
		Served:         per(a.served, b.served),
		APIRequests:    per(a.api, b.api),
		KVBytes:        per(a.kvBytes, b.kvBytes),
		InputBytes:     per(a.inputBytes, b.inputBytes),
		TaskBytes:      per(a.taskBytes, b.taskBytes),
	}
	o.KVUpdates = per(a.kvSeq, b.kvSeq) - o.KVCreates
	return o
}
