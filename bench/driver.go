package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/payload"
	"github.com/jetflow/jetflow/subjects"
)

// driver is the load generator: it starts runs and sends events through
// the client on its own connection, and learns of each run's end from the
// status announcements, one wildcard subscription for all runs.
type driver struct {
	names   subjects.Names
	nc      *nats.Conn
	js      jetstream.JetStream
	cl      *client.Client
	sub     *nats.Subscription
	timeout time.Duration

	mu      sync.Mutex
	waiters map[string]chan announcement
	// hook sees every announcement no waiter took (the parked scenario).
	hook atomic.Pointer[func(runID string, a announcement)]
}

// announcement is a status a run announced, and when it arrived.
type announcement struct {
	status string
	at     time.Time
	// body is the whole announcement (a wire.Status).
	body []byte
}

func newDriver(ctx context.Context, url string, names subjects.Names, timeout time.Duration) (*driver, error) {
	nc, err := nats.Connect(url, nats.Name("jetflow-bench-driver"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("bench: driver: connect to %s: %w", url, err)
	}
	d := &driver{names: names, nc: nc, timeout: timeout, waiters: map[string]chan announcement{}}
	fail := func(err error) (*driver, error) {
		nc.Close()
		return nil, fmt.Errorf("bench: driver: %w", err)
	}
	if d.js, err = jetstream.New(nc); err != nil {
		return fail(err)
	}
	if d.cl, err = client.New(ctx, d.js, client.Config{Names: names}); err != nil {
		return fail(err)
	}
	statusPrefix := names.Status("")
	if d.sub, err = nc.Subscribe(names.StatusAll(), func(m *nats.Msg) {
		runID := strings.TrimPrefix(m.Subject, statusPrefix)
		if _, ref, _ := payload.RefOf(m.Header); ref {
			// A status too large to announce inline (a large result)
			// travels by reference: read the run's status instead.
			go d.announceRead(runID)
			return
		}
		d.announced(runID, m.Data)
	}); err != nil {
		return fail(err)
	}
	// No limit: a burst of announcements must never be dropped.
	if err := d.sub.SetPendingLimits(-1, -1); err != nil {
		return fail(err)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		return fail(err)
	}
	return d, nil
}

func (d *driver) close() { d.nc.Close() }

// announceRead reads the status of a run whose announcement came by
// reference and announces it.
func (d *driver) announceRead(runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	st, err := d.cl.Status(ctx, runID)
	if err != nil {
		return // the waiter falls back to reading it at its timeout
	}
	data, err := json.Marshal(st)
	if err != nil {
		return
	}
	d.announced(runID, data)
}

func (d *driver) announced(runID string, data []byte) {
	a := announcement{status: statusOf(data), at: time.Now(), body: data}
	if run.Status(a.status).Terminal() {
		d.mu.Lock()
		ch, ok := d.waiters[runID]
		delete(d.waiters, runID)
		d.mu.Unlock()
		if ok {
			ch <- a
			return
		}
	}
	if h := d.hook.Load(); h != nil {
		(*h)(runID, a)
	}
}

// one runs w once as run id and returns its start-to-end latency.
func (d *driver) one(ctx context.Context, w workload, id string) (time.Duration, error) {
	ch := make(chan announcement, 1)
	d.mu.Lock()
	d.waiters[id] = ch
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.waiters, id)
		d.mu.Unlock()
	}()
	began := time.Now()
	if err := d.cl.StartRun(ctx, w.workflow, id, w.input); err != nil {
		return 0, err
	}
	if w.event != "" {
		if err := d.cl.SendEvent(ctx, id, w.event, nil); err != nil {
			return 0, err
		}
	}
	t := time.NewTimer(d.timeout)
	defer t.Stop()
	var a announcement
	select {
	case a = <-ch:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-t.C:
		// An announcement is a hint; the record is the truth.
		st, err := d.cl.Status(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("run %s did not end within %s: %w", id, d.timeout, err)
		}
		if !run.Status(st.Status).Terminal() {
			return 0, fmt.Errorf("run %s did not end within %s: it is %s", id, d.timeout, st.Status)
		}
		a = announcement{status: st.Status, at: time.Now()}
	}
	if a.status != string(run.StatusDone) {
		st, _ := d.cl.Status(ctx, id)
		return 0, fmt.Errorf("run %s ended %s, not done: %+v", id, a.status, st)
	}
	return a.at.Sub(began), nil
}

// closedLoop keeps window runs of w in flight, starting the next as one
// ends, until n runs have started or d passed. It returns each run's
// latency and the time from the first start to the last end.
func (d *driver) closedLoop(ctx context.Context, w workload, phase string, n, window int, dur time.Duration) ([]time.Duration, time.Duration, error) {
	if n <= 0 {
		return nil, 0, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next    atomic.Int64
		mu      sync.Mutex
		samples = make([]time.Duration, 0, min(n, 1<<20))
		wg      sync.WaitGroup
	)
	began := time.Now()
	deadline := began.Add(dur)
	for range min(window, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(n) || time.Now().After(deadline) {
					return
				}
				lat, err := d.one(ctx, w, fmt.Sprintf("%s-%s-%d", w.code, phase, i))
				if err != nil {
					cancel(err)
					return
				}
				mu.Lock()
				samples = append(samples, lat)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	if ctx.Err() != nil {
		return nil, 0, fmt.Errorf("bench: %s: %w", w.scenario, context.Cause(ctx))
	}
	return samples, elapsed, nil
}

// fire calls fn(i) for i in [0, n) from window goroutines.
func fire(ctx context.Context, n, window int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(window, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// statusOf reads the status of an announcement. The load generator's own
// cost counts in the figures, so it skips decoding the whole body: the
// fields before "status" (run, workflow, revision) are names that cannot
// hold a quote.
func statusOf(data []byte) string {
	const key = `"status":"`
	if i := bytes.Index(data, []byte(key)); i >= 0 {
		rest := data[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return string(rest[:j])
		}
	}
	var body struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(data, &body)
	return body.Status
}
