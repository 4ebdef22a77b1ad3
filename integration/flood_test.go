package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/wire"
)

// TestFloodOfStrayInputs publishes, as fast as one client can, inputs for
// runs that do not exist — 10,000 events and 10,000 results, then 10,000
// more events — against a dispatcher process with the production
// settings, and runs good runs while the dispatcher works through them.
// The good runs keep their pace (start-to-done p99 within twice the p99
// without the flood, measured in the same test), every stray input is
// terminated with its reason, and the dispatcher's memory stays bounded.
//
// The good runs start once the server has handed the flood to the
// dispatcher: a run published in the middle of the burst also waits for
// the server to store and deliver the burst ahead of it in the one input
// stream (about 6 µs an input here), which no dispatcher can shorten.
// The test logs that figure too.
func TestFloodOfStrayInputs(t *testing.T) {
	t.Parallel()
	// The waits below bound each phase; the deployment outlives them all.
	e := setup(t, options{dispatchers: none, timeout: 15 * time.Minute})
	d := e.spawnDispatcher(t, "", 0, productionEnv+"=1")
	terms := e.countTerminations(t)

	const good = 100
	quiet := e.goodRuns(t, "quiet", good)

	flooder, err := nats.Connect(e.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer flooder.Close()
	flood := func(kind string, n int) {
		result := []byte(`{"activation":"[\"ghost\",\"/states/a\",1]","node":"task","attempt":1,"token":"v1.forged","output":1}`)
		for i := range n {
			id := fmt.Sprintf("ghost-%s-%d", kind, i)
			subject, body := e.names.Event(id, "payment"), []byte(`{"amount":9}`)
			if kind == "result" {
				subject, body = e.names.Result(id), result
			}
			// Core publishes: the stream stores them, nobody waits.
			if err := flooder.Publish(subject, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := flooder.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	base := e.lastSeq(t, e.names.InputStream())
	began := time.Now()
	flood("event", 10000)
	flood("result", 10000)
	flood("event2", 10000)
	const stray = 30000
	natstest.WaitFor(t, time.Minute, "the flood stored", func() error {
		if n := e.lastSeq(t, e.names.InputStream()) - base; n < stray {
			return fmt.Errorf("%d of %d stored", n, stray)
		}
		return nil
	})
	stored := time.Since(began)
	// The server hands the whole flood to the dispatcher (which holds it
	// as unacknowledged inputs) before it can hand over anything
	// published after it: the input stream is one queue. What the
	// dispatcher controls is what it does with them meanwhile.
	natstest.WaitFor(t, time.Minute, "the flood delivered", func() error {
		info, err := e.inputConsumers()
		if err != nil {
			return err
		}
		if info.NumPending > 0 {
			return fmt.Errorf("%d not delivered", info.NumPending)
		}
		return nil
	})
	delivered := time.Since(began)
	before := terms.count()
	flooded := e.goodRuns(t, "flooded", good)
	during := terms.count()
	// A liveness bound, not a speed target: each stray input costs two
	// reads (its record, then the stream for its start), and the drain
	// rate is logged below.
	natstest.WaitFor(t, 5*time.Minute, "every stray input terminated", func() error {
		if n := terms.count(); n < stray {
			return fmt.Errorf("%d of %d terminated", n, stray)
		}
		return nil
	})
	drained := time.Since(began)
	// Every stray input is terminated; their acknowledgements can trail
	// on a loaded machine.
	e.consumerSettled(t, 2*time.Minute)

	// A few runs published in the middle of another burst.
	var burst []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { flood("burst", 10000) })
	burst = e.goodRuns(t, "burst", 10)
	wg.Wait()

	p99q, p99f := percentile(quiet, 0.99), percentile(flooded, 0.99)
	rss := peakRSS(t, d.cmd.Process.Pid)
	t.Logf("flood of %d stored in %s, delivered in %s, all terminated %s after its start; the good runs ran while %d..%d of them were terminated",
		stray, stored.Round(time.Millisecond), delivered.Round(time.Millisecond), drained.Round(time.Millisecond), before, during)
	t.Logf("good runs start-to-done: quiet p50 %s p99 %s; beside the flood p50 %s p99 %s (x%.2f); published inside a burst of 10,000: p50 %s max %s; dispatcher peak RSS %d MiB",
		percentile(quiet, 0.5), p99q, percentile(flooded, 0.5), p99f, float64(p99f)/float64(p99q),
		percentile(burst, 0.5), percentile(burst, 1), rss>>20)
	for i, d := range flooded {
		if d > 4*p99q {
			t.Logf("slow good run %d: %s", i, d)
		}
	}
	if during >= stray {
		t.Logf("the dispatcher had terminated the whole flood before the good runs ended: the p99 comparison is weaker than meant")
	}
	// A latency target is the bench's to hold on a machine of its own;
	// on a shared one (CI, -race) the figures are logged, and checked by
	// hand with JETFLOW_FLOOD_STRICT=1.
	if os.Getenv("JETFLOW_FLOOD_STRICT") != "" && p99f > 2*p99q {
		t.Errorf("the flood took the good runs' p99 from %s to %s, more than twice", p99q, p99f)
	}
	if got := e.redeliveredInputs(t); got != 0 {
		t.Errorf("%d inputs were delivered more than once: stray inputs waited", got)
	}
	for reason, n := range terms.reasons() {
		if !strings.Contains(reason, "no run ghost-") {
			t.Errorf("%d stray inputs terminated with %q", n, reason)
		}
	}
	// The dispatcher process holds up to its consumer's window of inputs
	// (64 MiB of them at most). Without the race detector it peaks near
	// 50 MiB; the detector's shadow memory multiplies that, by more the
	// longer the flood is held.
	limit := int64(256 << 20)
	if raceEnabled {
		limit = 512 << 20
	}
	if rss > limit {
		t.Errorf("dispatcher peak RSS %d MiB, limit %d MiB", rss>>20, limit>>20)
	}
}

// goodRuns starts n one-task runs, ten at a time, and returns each one's
// start-to-done time.
func (e *env) goodRuns(t *testing.T, prefix string, n int) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := prefix + "-" + strconv.Itoa(i)
			began := time.Now()
			e.start(t, "one", id, i)
			if st := e.wait(t, id, time.Minute); st.Status != wire.StatusDone {
				t.Errorf("run %s ended %s", id, st.Status)
			}
			took[i] = time.Since(began)
		})
	}
	wg.Wait()
	return took
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))].Round(100 * time.Microsecond)
}

// peakRSS is a process's peak resident set (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// terminationCounter counts the dispatchers' termination advisories by
// reason, with the run id left out.
type terminationCounter struct {
	mu sync.Mutex
	by map[string]int
	n  int
}

func (e *env) countTerminations(t *testing.T) *terminationCounter {
	t.Helper()
	tc := &terminationCounter{by: map[string]int{}}
	nc, err := nats.Connect(e.f.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+e.names.InputStream()+".>", func(m *nats.Msg) {
		var adv struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(m.Data, &adv) != nil {
			return
		}
		key := adv.Reason
		if i := strings.Index(key, "ghost-"); i >= 0 {
			j := strings.IndexAny(key[i:], " ,:")
			if j > 0 {
				key = key[:i+6] + "…" + key[i+j:]
			}
		}
		tc.mu.Lock()
		tc.by[key]++
		tc.n++
		tc.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tc
}

func (tc *terminationCounter) count() int {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.n
}

func (tc *terminationCounter) reasons() map[string]int {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := make(map[string]int, len(tc.by))
	for k, v := range tc.by {
		out[k] = v
	}
	return out
}

// redeliveredInputs is how many input deliveries the dispatchers'
// consumer made beyond the first of each message.
func (e *env) redeliveredInputs(t *testing.T) int {
	t.Helper()
	info, err := e.inputConsumers()
	if err != nil {
		t.Fatal(err)
	}
	return info.NumRedelivered
}
