package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestCrashPoints kills a dispatcher (it stops acknowledging, publishing
// and saving) right after the save or right after the publish of a step,
// stops it, and checks that a second dispatcher finishes the run with the
// right result, one stored invocation and no input applied twice.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	reducers(t, testCrashPoints)
}

func testCrashPoints(t *testing.T, setup func(t *testing.T) *bundle) {
	for _, point := range []hookPoint{hookAfterSave, hookAfterPublish} {
		for _, kind := range []string{subjects.KindStart, subjects.KindResult} {
			t.Run(fmt.Sprintf("%s_%s", point, kind), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				var once sync.Once
				crashed := make(chan struct{})
				cfg := Config{AckWait: 500 * time.Millisecond, RetryDelay: 50 * time.Millisecond}
				d1cfg := cfg
				d1cfg.hooks = &hooks{at: func(p hookPoint, _, k string) error {
					if p != point || k != kind {
						return nil
					}
					err := error(nil)
					once.Do(func() { close(crashed); err = errCrash })
					return err
				}}
				d1 := b.dispatcher(t, d1cfg)
				var calls sync.Map
				b.serveTask(t, "echo", "1", func(ctx context.Context, inv worker.Invocation) (any, error) {
					n, _ := calls.LoadOrStore(inv.Activation, new(int))
					*n.(*int)++
					return echoUpper(ctx, inv)
				})
				b.startTask(t, "r", "p")
				select {
				case <-crashed:
				case <-time.After(time.Minute):
					t.Fatal("the crash point was never reached")
				}
				stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := d1.Stop(stopCtx); err != nil {
					t.Fatal(err)
				}
				d2 := b.dispatcher(t, cfg)
				rec := b.waitStatus(t, "r", wire.StatusDone, 15*time.Second)
				if got, want := string(rec.Status.Result), `{"attempt":1,"echo":"p"}`; got != want {
					t.Errorf("result %s, want %s", got, want)
				}
				b.consumerSettled(t, 10*time.Second)
				if n := b.stored(t, b.names.TaskStream()); n != 1 {
					t.Errorf("%d invocations stored, want 1", n)
				}
				rec = b.record(t, "r")
				if len(rec.Applied) != 2 || rec.Applied[0] == rec.Applied[1] {
					t.Errorf("applied inputs %v, want the start and the result once each", rec.Applied)
				}
				if len(rec.Rejected) != 0 {
					t.Errorf("rejections %+v, want none", rec.Rejected)
				}
				// At least once: on a loaded machine d2 can outlast the 500 ms
				// ack wait on the redelivery too, and meet it a third time.
				if got := testutil.ToFloat64(d2.m.messages.WithLabelValues(kind, outcomeDuplicate)); got < 1 {
					t.Errorf("d2 saw %v redelivered %s inputs already applied, want at least 1", got, kind)
				}
				calls.Range(func(k, v any) bool {
					if *v.(*int) != 1 {
						t.Errorf("activation %v ran %d times", k, *v.(*int))
					}
					return true
				})
			})
		}
	}
}

// TestExactlyOnceAcrossDispatchers runs 200 runs on three dispatchers
// sharing the consumer. Every run invokes a task; on the fake reducer half
// of them take five events each instead (whose steps race across
// processes and conflict). Every run must end done with each input
// applied exactly once.
func TestExactlyOnceAcrossDispatchers(t *testing.T) {
	t.Parallel()
	reducers(t, testExactlyOnce)
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("3-node cluster")
		}
		t.Parallel()
		testExactlyOnce(t, setupCluster)
	})
}

func testExactlyOnce(t *testing.T, setup func(t *testing.T) *bundle) {
	b := setup(t)
	const runs, events = 200, 5
	var ds []*Dispatcher
	for range 3 {
		ds = append(ds, b.dispatcher(t, Config{Concurrency: 8, CacheSize: 64}))
	}
	b.simpleWorker(t, "echo", "1")
	withEvents := func(i int) bool { return b.reg == nil && i%2 == 1 }
	tasks := 0
	for i := range runs {
		id := fmt.Sprintf("run-%d", i)
		if !withEvents(i) {
			b.startTask(t, id, i)
			tasks++
			continue
		}
		b.start(t, id, map[string]any{"events": events})
		for e := range events {
			b.publish(t, b.names.Event(id, "e"), e, "")
		}
	}
	for i := range runs {
		id := fmt.Sprintf("run-%d", i)
		rec := b.waitStatusOrDump(t, id, wire.StatusDone, 30*time.Second)
		if !withEvents(i) {
			if got, want := string(rec.Status.Result), fmt.Sprintf(`{"attempt":1,"echo":%d}`, i); got != want {
				t.Errorf("%s: result %s, want %s", id, got, want)
			}
			if len(rec.Applied) != 2 {
				t.Errorf("%s: applied %v, want the start and the result", id, rec.Applied)
			}
		} else {
			var got []float64
			if err := json.Unmarshal(rec.Status.Result, &got); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, []float64{0, 1, 2, 3, 4}) {
				t.Errorf("%s: events applied %v, want each of 0..4 once", id, got)
			}
		}
		if len(rec.Rejected) != 0 {
			t.Errorf("%s: rejections %+v", id, rec.Rejected)
		}
	}
	b.consumerSettled(t, 10*time.Second)
	if n := b.stored(t, b.names.TaskStream()); n != uint64(tasks) {
		t.Errorf("%d invocations stored, want %d", n, tasks)
	}
	var settled, started, conflicts float64
	for _, d := range ds {
		settled += testutil.ToFloat64(d.m.settled.WithLabelValues("done"))
		started += testutil.ToFloat64(d.m.started)
		conflicts += testutil.ToFloat64(d.m.conflicts)
	}
	if settled != runs || started != runs {
		t.Errorf("metrics: %v started, %v settled, want %d each", started, settled, runs)
	}
	t.Logf("CAS conflicts across 3 dispatchers: %v", conflicts)
}

func (b *bundle) waitStatusOrDump(t *testing.T, runID, status string, timeout time.Duration) *runrecord.Record {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if rec := b.record(t, runID); rec != nil && rec.Status != nil && rec.Status.Status == status {
			return rec
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec := b.record(t, runID)
	data, _ := json.Marshal(rec)
	t.Logf("record: %s", data)
	info, _ := b.dispatcherConsumers(t)
	data, _ = json.Marshal(info)
	t.Logf("consumer: %s", data)
	if tc, err := b.js.Consumer(testCtx(t), b.names.TaskStream(), b.names.TaskConsumer("echo", "1")); err == nil {
		info, _ := tc.Info(testCtx(t))
		data, _ = json.Marshal(info)
		t.Logf("task consumer: %s", data)
	}
	t.Logf("task stream stored %d", b.stored(t, b.names.TaskStream()))
	oc, _ := b.js.OrderedConsumer(testCtx(t), b.names.InputStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.names.RunInputs(runID)}})
	batch, _ := oc.FetchNoWait(100)
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		t.Logf("input seq %d %s %s", md.Sequence.Stream, m.Subject(), m.Data())
	}
	t.Fatalf("run %s not %s", runID, status)
	return nil
}
