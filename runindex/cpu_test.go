package runindex_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/engine/workflow"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/policy"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/runindex"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

// indexCPU is the runs of each round of TestIndexCPU; 0 skips it.
var indexCPU = flag.Int("index-cpu", 0, "runs per round TestIndexCPU drives, rounds with and without the indexer in turn (0 skips it)")

// TestIndexCPU measures what keeping the index costs a dispatcher: rounds
// of -index-cpu gate runs (start, then event: three record writes each)
// through one dispatcher with its indexer off and on in turn, and the CPU
// time of the whole process (server, dispatcher, indexer, client) per run
// in each. It checks every run of an indexed round is listed.
//
//	go test ./runindex/ -run TestIndexCPU -v -args -index-cpu=1000
func TestIndexCPU(t *testing.T) {
	n := *indexCPU
	if n == 0 {
		t.Skip("give -index-cpu N to run it")
	}
	srv := natstest.Server(t)
	js := natstest.JetStream(t, natstest.Conn(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	names := subjects.Must("")
	if err := provision.Provision(ctx, js, names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.OpenRegistry(ctx, js, names, registry.RegistryConfig{Validate: func(doc any) (registry.Info, error) {
		_, err := workflow.Compile(doc, workflow.Options{})
		return registry.Info{}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse([]byte(`{"$run": {"search": {"customer": "/input/customer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.DeployWithPolicy(ctx, "gate", []byte(gate), pol); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, js, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	perRun := map[bool][]time.Duration{}
	for round := range 6 {
		on := round%2 == 1
		d, err := dispatcher.New(js, nil, reg, dispatcher.Config{Logger: quiet, Index: runindex.Config{Off: !on}})
		if err != nil {
			t.Fatal(err)
		}
		writes0, delivered0 := indexWork(ctx, t, js, names)
		cpu0 := cpuTime()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			id := fmt.Sprintf("cpu-%d-%d", round, i)
			if err := c.StartRun(ctx, "gate", id, map[string]any{"customer": fmt.Sprintf("c-%d", i%100)}); err != nil {
				t.Fatal(err)
			}
			if err := c.SendEvent(ctx, id, "go", nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			if _, err := c.Wait(ctx, fmt.Sprintf("cpu-%d-%d", round, i)); err != nil {
				t.Fatal(err)
			}
		}
		if on {
			drained(ctx, t, js, names)
		}
		cpu := cpuTime() - cpu0
		if on {
			caughtUp(ctx, t, c, round*n+n)
		}
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		err = d.Stop(sctx)
		scancel()
		if err != nil {
			t.Fatal(err)
		}
		if !on { // index this round's runs outside the measurement
			x := runindex.New(js, runindex.Config{Logger: quiet})
			x.Start()
			caughtUp(ctx, t, c, round*n+n)
			x.Stop()
		}
		perRun[on] = append(perRun[on], cpu/time.Duration(n))
		t.Logf("round %d, indexer on %v: %s CPU per run", round, on, (cpu / time.Duration(n)).Round(time.Microsecond))
		if on {
			writes, delivered := indexWork(ctx, t, js, names)
			t.Logf("round %d: %.2f index messages stored and %.2f record changes delivered to the indexer per run",
				round, float64(writes-writes0)/float64(n), float64(delivered-delivered0)/float64(n))
		}
	}
	avg := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s / time.Duration(len(ds))
	}
	t.Logf("CPU per run: indexer off %s, on %s: the index costs %s per run (3 record writes)",
		avg(perRun[false]).Round(time.Microsecond), avg(perRun[true]).Round(time.Microsecond), (avg(perRun[true]) - avg(perRun[false])).Round(time.Microsecond))
}

// indexWork is the index stream's last sequence and the record changes
// delivered to the indexers so far.
func indexWork(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names) (writes, delivered uint64) {
	t.Helper()
	s, err := js.Stream(ctx, names.IndexStream())
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, names.KVStream(names.RunBucket()), names.IndexerConsumer())
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return s.CachedInfo().State.LastSeq, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.LastSeq, cons.CachedInfo().Delivered.Consumer
}

// caughtUp waits until the index lists want done runs.
func caughtUp(ctx context.Context, t *testing.T, c *client.Client, want int) {
	t.Helper()
	natstest.WaitFor(t, 5*time.Minute, "every run indexed", func() error {
		page, err := c.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Status: wire.StatusDone}, Wait: time.Minute})
		if err != nil {
			return err
		}
		if page.Scanned {
			return errors.New("the listing read the run records (the index's off mark stands)")
		}
		if page.Behind > 0 || len(page.Runs) != want {
			return fmt.Errorf("the index lists %d done runs (%d changes behind), want %d", len(page.Runs), page.Behind, want)
		}
		return nil
	})
}

// drained waits until the indexer's consumer has nothing pending: a
// cheap read, unlike a listing, so it stays out of the measurement.
func drained(ctx context.Context, t *testing.T, js jetstream.JetStream, names subjects.Names) {
	t.Helper()
	natstest.WaitFor(t, 5*time.Minute, "the indexer drained", func() error {
		cons, err := js.Consumer(ctx, names.KVStream(names.RunBucket()), names.IndexerConsumer())
		if err != nil {
			return err
		}
		if info := cons.CachedInfo(); info.NumPending+uint64(info.NumAckPending) > 0 { //nolint:gosec // a count
			return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}
