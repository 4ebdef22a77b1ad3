package replay_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/replay"
	"github.com/jetflow/jetflow/wire"
)

// BenchmarkCheckRevision measures check-revision's throughput on real
// histories: JETFLOW_BENCH_RUNS runs (default 2000) of migBase, a task
// result each and half of them paid by an event (3 to 4 inputs each),
// read from a real server (records by direct reads, histories in one
// ordered-consumer pass) and replayed under their revision and a
// revision that adds a step. It reports runs/min.
func BenchmarkCheckRevision(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("JETFLOW_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	bb := setup(b, provision.ProvisionOptions{}, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := bb.f.Deploy(ctx, "mig", []byte(migBase)); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := p; i < n; i += 8 {
				ids[i] = fmt.Sprintf("bench-%05d", i)
				if err := bb.f.Client.StartRun(ctx, "mig", ids[i], 4); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	natstest.WaitFor(b, 10*time.Minute, "every run waiting", func() error {
		page, err := bb.f.Client.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Workflow: "mig", Status: wire.StatusWaiting}, Scan: true})
		if err != nil {
			return err
		}
		if len(page.Runs) != n {
			return fmt.Errorf("%d of %d waiting", len(page.Runs), n)
		}
		return nil
	})
	for i := 0; i < n; i += 2 {
		if err := bb.f.Client.SendEvent(ctx, ids[i], "go", nil); err != nil {
			b.Fatal(err)
		}
	}
	natstest.WaitFor(b, 10*time.Minute, "every paid run done", func() error {
		page, err := bb.f.Client.ListRuns(ctx, client.ListOptions{Filter: wire.RunFilter{Workflow: "mig", Status: wire.StatusDone}, Scan: true})
		if err != nil {
			return err
		}
		if len(page.Runs) != n/2 {
			return fmt.Errorf("%d of %d done", len(page.Runs), n/2)
		}
		return nil
	})
	added := revise(migBase, "mig-2", `{"event":"go","to":"done"}`, `{"event":"go","to":"extra"}`, `"done":{"final":true}`, `"extra":{"work":{"task":"double","version":"1"},"then":"done"},"done":{"final":true}`)
	cand, err := replay.Candidate(ctx, bb.f.Registry, runOptions, "mig", []byte(added), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	began := time.Now()
	checked := 0
	for b.Loop() {
		got, err := replay.CheckRevision(ctx, bb.src, cand, ids)
		if err != nil {
			b.Fatal(err)
		}
		same := 0
		for _, v := range got {
			if v.Verdict == replay.CheckSame {
				same++
			}
		}
		if same != n/2 {
			b.Fatalf("%d of %d runs the same, want the %d waiting ones", same, n, n/2)
		}
		checked += len(got)
	}
	b.ReportMetric(float64(checked)/time.Since(began).Minutes(), "runs/min")
}
