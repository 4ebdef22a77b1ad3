package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestMaxConcurrencyCapsAttemptsInFlight: a task version's
// maxConcurrency is its consumer's MaxAckPending, so with six runs
// waiting and a worker free to take sixteen, the server hands out two at
// a time; the others wait in the stream.
func TestMaxConcurrencyCapsAttemptsInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	d, err := f.DeployWith(ctx, "capped", catching("capped", "v1"), DeployOptions{Policy: mustPolicy(t, `{"capped@1":{"maxConcurrency":2}}`)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.JS.Consumer(ctx, f.Names.TaskStream(), f.Names.TaskConsumer("capped", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config.MaxAckPending; got != 2 {
		t.Fatalf("consumer MaxAckPending %d, want the policy's 2 (notes %v)", got, d.Notes)
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"capped": func(ctx context.Context, _ worker.Invocation) (any, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
			select {
			case <-release:
				return "ok", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	const runs = 6
	for i := range runs {
		if err := f.Client.StartRun(ctx, "capped", fmt.Sprintf("capped-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Every invocation is in the stream, two delivered and four held back.
	natstest.WaitFor(t, 2*time.Minute, "two invocations in flight and four waiting", func() error {
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		n := inFlight
		mu.Unlock()
		if info.NumAckPending != 2 || info.NumPending != runs-2 || n != 2 {
			return fmt.Errorf("ack pending %d, pending %d, handlers running %d", info.NumAckPending, info.NumPending, n)
		}
		return nil
	})
	close(release)
	for i := range runs {
		st, err := f.Client.Wait(ctx, fmt.Sprintf("capped-%d", i))
		if err != nil || st.Status != wire.StatusDone || st.State != "/states/ok" {
			t.Fatalf("run capped-%d: %+v, %v", i, st, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 2 {
		t.Fatalf("%d attempts ran at once, more than maxConcurrency 2", most)
	}
}

// TestRateLimitSpacesStarts: with ratePerSecond 2 and rateBurst 2, six
// runs started together get their attempts at no less than the slots the
// rate gives them: two at once, then one every half second. Held
// invocations are released by the server's message schedules, so each
// delivery is at or after its slot (never early); load only delays it.
func TestRateLimitSpacesStarts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "paced", catching("paced", "v1"), DeployOptions{Policy: mustPolicy(t, `{"paced":{"ratePerSecond":2,"rateBurst":2}}`)}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []time.Time
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"paced": func(context.Context, worker.Invocation) (any, error) {
			mu.Lock()
			got = append(got, time.Now())
			mu.Unlock()
			return "ok", nil
		},
	})
	const runs, rate, burst = 6, 2.0, 2
	begin := time.Now()
	for i := range runs {
		if err := f.Client.StartRun(ctx, "paced", fmt.Sprintf("paced-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range runs {
		st, err := f.Client.Wait(ctx, fmt.Sprintf("paced-%d", i))
		if err != nil || st.Status != wire.StatusDone || st.State != "/states/ok" {
			t.Fatalf("run paced-%d: %+v, %v", i, st, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
	if len(got) != runs {
		t.Fatalf("%d deliveries, want %d", len(got), runs)
	}
	for i, at := range got {
		// The i-th slot is at least (i-burst+1)/rate after the first,
		// which came after begin.
		slot := begin.Add(time.Duration(float64(max(0, i-burst+1)) / rate * float64(time.Second)))
		if at.Before(slot) {
			t.Errorf("delivery %d at +%v, before its earliest slot +%v", i, at.Sub(begin), slot.Sub(begin))
		}
		t.Logf("delivery %d at +%v, earliest slot +%v", i, at.Sub(begin).Round(time.Millisecond), slot.Sub(begin))
	}
	kv, err := f.JS.KeyValue(ctx, f.Names.LimitsBucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, subjects.LimitKey("paced", "1")); err != nil {
		t.Fatalf("the rate limit's state: %v", err)
	}
}

// TestRateLimitedAttemptStillTimesOut: a run whose attempt waits on a
// rate limit keeps its deadline. At one start per 1000 s, the second run's
// slot comes after its attempt's 15 s deadline: it is not released, and
// the attempt fails with TASK_TIMEOUT there, which its catch takes.
func TestRateLimitedAttemptStillTimesOut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := startFleet(t, ctx)
	if _, err := f.DeployWith(ctx, "scarce", catching("scarce", "v1"),
		DeployOptions{Policy: mustPolicy(t, `{"scarce":{"ratePerSecond":0.001,"attemptTimeout":"15s","maxAttempts":1}}`)}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	startWorker(t, ctx, f.JS, f, map[string]worker.Handler{
		"scarce": func(_ context.Context, inv worker.Invocation) (any, error) {
			mu.Lock()
			served = append(served, inv.Run)
			mu.Unlock()
			return "ok", nil
		},
	})
	if err := f.Client.StartRun(ctx, "scarce", "first", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Client.Wait(ctx, "first"); err != nil || st.State != "/states/ok" {
		t.Fatalf("first run: %+v, %v", st, err)
	}
	if err := f.Client.StartRun(ctx, "scarce", "second", nil); err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.Wait(ctx, "second")
	if err != nil || st.Status != wire.StatusDone || st.State != "/states/caught" {
		t.Fatalf("second run: %+v, %v; want caught after its attempt timed out", st, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(served, []string{"first"}) {
		t.Fatalf("served %v, want only the first run", served)
	}
}
