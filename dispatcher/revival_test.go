package dispatcher

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/kvstore"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/subjects"
)

// revivalSetup is an input stream holding runs inputs of n runs (a start,
// a result and an event each); every 100th run also has a redrive and
// then a reset, every 100th from the 50th a reset and then a redrive.
func revivalSetup(tb testing.TB, n int) (*Dispatcher, []string) {
	tb.Helper()
	srv := natstest.Server(tb)
	// Room for every message in flight: a loaded machine acknowledges
	// slower than the test publishes.
	js, err := jetstream.New(natstest.Conn(tb, srv), jetstream.WithPublishAsyncMaxPending(1<<16))
	if err != nil {
		tb.Fatal(err)
	}
	names := subjects.Must("")
	ctx := testCtx(tb)
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		tb.Fatal(err)
	}
	runs := make([]string, n)
	var acks []jetstream.PubAckFuture
	pub := func(subj string) {
		f, err := js.PublishAsync(subj, []byte(`{}`))
		if err != nil {
			tb.Fatal(err)
		}
		acks = append(acks, f)
	}
	for i := range runs {
		run := fmt.Sprintf("run-%05d", i)
		runs[i] = run
		pub(names.Start(run))
		pub(names.Result(run))
		pub(names.Event(run, "x"))
		switch i % 100 {
		case 0:
			pub(names.Redrive(run))
			pub(names.Reset(run))
		case 50:
			pub(names.Reset(run))
			pub(names.Redrive(run))
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		tb.Fatal(ctx.Err())
	}
	for _, f := range acks {
		select {
		case err := <-f.Err():
			tb.Fatal(err)
		default:
		}
	}
	inputs, err := js.Stream(ctx, names.InputStream())
	if err != nil {
		tb.Fatal(err)
	}
	return &Dispatcher{js: js, cfg: Config{Names: names, OpTimeout: 30 * time.Second}, partitions: provision.Partitions(inputs.CachedInfo().Config)}, runs
}

// TestRevivals: the read before removals finds each run's latest redrive
// or reset, over more runs than one direct get covers, and nothing for
// runs that have only other inputs.
func TestRevivals(t *testing.T) {
	t.Parallel()
	d, runs := revivalSetup(t, 3*revivalBatch+7)
	last, err := d.revivals(testCtx(t), runs)
	if err != nil {
		t.Fatal(err)
	}
	names := d.cfg.Names
	kind := func(m *jetstream.RawStreamMsg) string {
		_, k, _, _ := names.ParseInput(m.Subject)
		return k
	}
	for i, run := range runs {
		m := last[run]
		switch i % 100 {
		case 0:
			if m == nil || kind(m) != subjects.KindReset {
				t.Errorf("run %s: latest %+v, want its reset (after its redrive)", run, m)
			}
		case 50:
			if m == nil || kind(m) != subjects.KindRedrive {
				t.Errorf("run %s: latest %+v, want its redrive (after its reset)", run, m)
			}
		default:
			if m != nil {
				t.Errorf("run %s: latest %s, want none (no redrive or reset)", run, m.Subject)
			}
		}
	}
}

// BenchmarkRemovalRead compares the read before a removal: the run's
// latest input of any kind through the stream leader, one request per run
// (the previous release), with the latest redrive and reset of a batch of
// runs in one direct get. One op is one run; cpu-µs/run is the process's
// CPU time (server and client) per run.
func BenchmarkRemovalRead(b *testing.B) {
	d, runs := revivalSetup(b, 4096)
	ctx := context.Background()
	names := d.cfg.Names
	for _, bm := range []struct {
		name string
		read func(runs []string) error
	}{
		{"latest-input-per-run", func(runs []string) error {
			for _, run := range runs {
				if _, err := kvstore.LastOnSubject(ctx, d.js, names.InputStream(), names.RunInputs(run)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"redrive-and-reset-batched", func(runs []string) error {
			_, err := d.revivals(ctx, runs)
			return err
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c0 := rusage(b)
			done := 0
			for b.Loop() {
				n := min(revivalBatch, len(runs))
				from := done % (len(runs) - n + 1)
				if err := bm.read(runs[from : from+n]); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.ReportMetric(float64((rusage(b)-c0).Microseconds())/float64(done), "cpu-µs/run")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/run")
		})
	}
}

func rusage(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
