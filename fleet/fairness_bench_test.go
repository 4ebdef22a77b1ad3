package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/worker"
)

// BenchmarkFairnessQueueWait measures what fairness across keys is for:
// the queue wait (from the start's publish to the worker's receipt of
// the run's one task) of three quiet tenants, 20 runs each started over
// about two seconds, on a task version with maxConcurrency 8 and 10 ms
// tasks, once every invocation of the noisy tenant is published. "alone": only the quiet tenants. "noisy-fifo": a fourth tenant
// starts 2000 runs (100 times each quiet one's) just before, on a task
// version without a key, so every invocation waits in stream order.
// "noisy-keyed": the same, with "key": "$.input.tenant", so the queue is
// served round robin across tenants. Run once:
//
//	go test ./fleet -run '^$' -bench FairnessQueueWait -benchtime 1x
func BenchmarkFairnessQueueWait(b *testing.B) {
	for _, c := range []struct {
		name   string
		policy string
		noisy  int
	}{
		{"alone", `{"fb@1":{"key":"$.input.tenant","maxConcurrency":8}}`, 0},
		{"noisy-fifo", `{"fb@1":{"maxConcurrency":8}}`, 2000},
		{"noisy-keyed", `{"fb@1":{"key":"$.input.tenant","maxConcurrency":8}}`, 2000},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				p50, p99 := fairnessRound(b, c.policy, c.noisy)
				b.ReportMetric(float64(p50)/float64(time.Millisecond), "quiet-p50-ms")
				b.ReportMetric(float64(p99)/float64(time.Millisecond), "quiet-p99-ms")
			}
		})
	}
}

func fairnessRound(b *testing.B, policyText string, noisy int) (p50, p99 time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f := startFleet(b, ctx)
	if _, err := f.DeployWith(ctx, "fb", catching("fb", "v1"), DeployOptions{Policy: mustPolicy(b, policyText)}); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	started := map[string]time.Time{}
	var waits []time.Duration
	quietDone := make(chan struct{})
	const quietTenants, quietRuns = 3, 20
	startWorker(b, ctx, f.JS, f, map[string]worker.Handler{
		"fb": func(ctx context.Context, inv worker.Invocation) (any, error) {
			now := time.Now()
			mu.Lock()
			if at, ok := started[inv.Run]; ok {
				waits = append(waits, now.Sub(at))
				if len(waits) == quietTenants*quietRuns {
					close(quietDone)
				}
			}
			mu.Unlock()
			select {
			case <-time.After(10 * time.Millisecond):
				return "ok", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	b.ResetTimer()
	for i := range noisy {
		if err := f.Client.StartRun(ctx, "fb", fmt.Sprintf("noisy-%d", i), map[string]any{"tenant": "noisy"}); err != nil {
			b.Fatal(err)
		}
	}
	// The quiet runs start once every noisy invocation is published (in
	// the queue stream, or the task stream without a key): what is
	// measured is the wait for a worker, not the dispatchers' backlog of
	// 2000 starts.
	stream := f.Names.QueueStream()
	if !strings.Contains(policyText, `"key"`) {
		stream = f.Names.TaskStream()
	}
	st, err := f.JS.Stream(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	natstest.WaitFor(b, 5*time.Minute, "every noisy invocation published", func() error {
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.LastSeq < uint64(noisy) {
			return fmt.Errorf("%d of %d published", info.State.LastSeq, noisy)
		}
		return nil
	})
	for i := range quietRuns {
		for q := range quietTenants {
			id := fmt.Sprintf("quiet%d-%d", q, i)
			mu.Lock()
			started[id] = time.Now()
			mu.Unlock()
			if err := f.Client.StartRun(ctx, "fb", id, map[string]any{"tenant": fmt.Sprintf("quiet%d", q)}); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond) // a steady trickle, not a burst
	}
	select {
	case <-quietDone:
	case <-ctx.Done():
		b.Fatal("the quiet tenants' runs were not all served")
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(waits)
	return waits[len(waits)/2], waits[(len(waits)*99+99)/100-1]
}
