package security

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetflow/jetflow/dispatcher"
	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// The fuzzed deployment's workflows: "good" runs must end exactly as
// without the noise; "fuzz" runs are started, fed and cancelled by the
// fuzzer itself, so that hostile messages also reach live runs.
const (
	goodFlow = `{"$workflow":"0.2","revision":"g1","initial":"work","states":{
 "work":{"work":{"task":"echo","version":"1"},"then":"wait"},
 "wait":{"on":[{"event":"go","to":"done"}]},
 "done":{"final":true}}}`
	fuzzFlow = `{"$workflow":"0.2","revision":"f1","initial":"idle","states":{
 "idle":{"on":[{"event":"a","to":"work"},{"event":"b","guard":{"$gt":["$.payload.n",5]},"to":"done"}],"after":{"ms":400,"to":"done"}},
 "work":{"work":{"task":"echo","version":"1"},"then":"idle","catch":"done"},
 "done":{"final":true}}}`
)

// Sizes of the fuzzed deployment: the dispatcher refuses inputs above
// fuzzInputLimit; the server refuses messages above fuzzServerPayload.
const (
	fuzzInputLimit    = 256 << 10
	fuzzServerPayload = 2 << 20
	goodRuns          = 12
)

// envInt reads a positive integer from the environment.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive integer", name, s)
	}
	return n
}

// TestWireFuzz publishes thousands of mutated and random messages on
// every subject jetflow consumes (JETFLOW_FUZZ_MESSAGES, default 5000;
// JETFLOW_FUZZ_SEED to replay a run) while good runs proceed beside them.
// It checks that no input crashes or stalls the dispatcher, that every
// good run ends exactly as it would alone, and that every hostile message
// was either refused at the edge or recorded with a reason: terminated
// (the advisory carries it) or rejected on its run.
func TestWireFuzz(t *testing.T) {
	count := envInt(t, "JETFLOW_FUZZ_MESSAGES", 5000)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("JETFLOW_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("JETFLOW_FUZZ_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (JETFLOW_FUZZ_SEED=%d replays it), %d messages", seed, seed, count)
	began := time.Now()
	ctx := testCtx(t, 10*time.Minute)
	logs := newCapture(slog.LevelInfo)
	f, err := fleet.Start(ctx, fleet.Config{
		Embedded: embedded.Config{Listen: "127.0.0.1:-1", MaxPayload: fuzzServerPayload, Logger: quiet()},
		Dispatcher: &dispatcher.Config{
			UnknownRunWait: 300 * time.Millisecond, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 200 * time.Millisecond,
			AppliedHistory: 1 << 20, RejectedHistory: 1 << 20, MaxInputBytes: fuzzInputLimit, Logger: logs.logger(),
		},
		Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.Stop(sctx)
	})
	for name, doc := range map[string]string{"good": goodFlow, "fuzz": fuzzFlow} {
		if _, err := f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	serveEcho(t, f)

	w := &wireFuzz{names: f.Names, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), invs: map[string][]wire.Invocation{}}
	spy, err := f.Conn.Subscribe(f.Names.TaskAll(), w.spy)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spy.Unsubscribe() }()
	terminated := watchTerminations(t, f)

	// Good runs start one after another in the middle of the noise.
	var wg sync.WaitGroup
	results := make([]string, goodRuns)
	startGood := func(i int) {
		id := fmt.Sprintf("good-%d", i)
		if err := f.Client.StartRun(ctx, "good", id, map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
		w.good = append(w.good, id)
		wg.Go(func() { results[i] = driveGood(t, ctx, f, id) })
	}
	startGood(0)
	every := max(1, count/goodRuns)

	sent := make([]fuzzed, 0, count)
	type pending struct {
		f   jetstream.PubAckFuture
		idx int
	}
	var inflight []pending
	settle := func() {
		for _, p := range inflight {
			select {
			case ack := <-p.f.Ok():
				sent[p.idx].seq, sent[p.idx].dup = ack.Sequence, ack.Duplicate
			case err := <-p.f.Err():
				sent[p.idx].refused = err.Error()
			case <-ctx.Done():
				t.Fatal("publish acknowledgements did not arrive")
			}
		}
		inflight = inflight[:0]
	}
	for i := range count {
		if i > 0 && i%every == 0 && len(w.good) < goodRuns {
			startGood(len(w.good))
		}
		m, fz := w.message()
		sent = append(sent, fz)
		fut, err := f.JS.PublishMsgAsync(m)
		if err != nil {
			// Refused at the edge before it left the client (too large).
			sent[len(sent)-1].refused = err.Error()
			continue
		}
		inflight = append(inflight, pending{fut, len(sent) - 1})
		if len(inflight) == 256 {
			settle()
		}
	}
	settle()
	for len(w.good) < goodRuns {
		startGood(len(w.good))
	}
	wg.Wait()

	// Zero stalls: everything received is handled.
	natstest.WaitFor(t, 3*time.Minute, "dispatcher consumers drained", func() error {
		return inputsDrained(ctx, f)
	})

	// Every good run is correct.
	for i, got := range results {
		if want := fmt.Sprintf(`{"echo":{"n":%d}}`, i); got != want {
			t.Errorf("good-%d ended with %s, want %s", i, got, want)
		}
	}
	checkRecorded(t, ctx, f, sent, terminated)
	for _, l := range logs.lines() {
		if strings.Contains(l, "panic") {
			t.Errorf("a dispatcher log line reports a panic: %s", l)
		}
	}
	// The dispatcher is still serving: one more run, start to end.
	id := "after-fuzz"
	if err := f.Client.StartRun(ctx, "good", id, map[string]any{"n": -1}); err != nil {
		t.Fatal(err)
	}
	if got := driveGood(t, ctx, f, id); got != `{"echo":{"n":-1}}` {
		t.Errorf("%s ended with %s", id, got)
	}
	if !t.Failed() {
		t.Logf("%d hostile messages, %d good runs correct, no crash, no stall, in %s", count, goodRuns+1, time.Since(began).Round(time.Millisecond))
	}
}

// serveEcho answers echo@1 with {"echo": input} through the SDK.
func serveEcho(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	wk, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := wk.Register("echo", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		return map[string]any{"echo": inv.Input}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Start's context bounds the worker's whole life: end it at cleanup.
	if err := wk.Start(lifetime(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = wk.Stop(ctx)
	})
}

// driveGood sends a good run its event once it waits for it and returns
// the run's result (or its status and error). It runs on its own
// goroutine, so it reports instead of failing the test.
func driveGood(t *testing.T, ctx context.Context, f *fleet.Fleet, id string) string {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st, err := f.Client.Status(ctx, id)
		if err == nil && st.Status == wire.StatusWaiting {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s never waited for its event: %+v, %v", id, st, err)
			return ""
		}
		select {
		case <-ctx.Done():
			t.Error(ctx.Err())
			return ""
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := f.Client.SendEvent(ctx, id, "go", map[string]any{"from": "test"}); err != nil {
		t.Error(err)
		return ""
	}
	st, err := f.Client.Wait(ctx, id)
	if err != nil {
		t.Error(err)
		return ""
	}
	if st.Status != wire.StatusDone {
		return fmt.Sprintf("%s %+v", st.Status, st.Error)
	}
	return string(st.Result)
}

// terminations maps stream sequences to the reason their termination
// advisory gave.
type terminations struct {
	mu   sync.Mutex
	seqs map[uint64]string
}

func (tm *terminations) get(seq uint64) (string, bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	r, ok := tm.seqs[seq]
	return r, ok
}

func watchTerminations(t *testing.T, f *fleet.Fleet) *terminations {
	t.Helper()
	tm := &terminations{seqs: map[uint64]string{}}
	// Any of the dispatchers' consumers: one per partition.
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + f.Names.InputStream() + ".*"
	sub, err := f.Conn.Subscribe(subject, func(m *nats.Msg) {
		var a struct {
			StreamSeq uint64 `json:"stream_seq"`
			Reason    string `json:"reason"`
		}
		if json.Unmarshal(m.Data, &a) == nil {
			tm.mu.Lock()
			tm.seqs[a.StreamSeq] = a.Reason
			tm.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := f.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return tm
}

// checkRecorded checks that every stored hostile message left a record
// with a reason, and that none changed a good run.
func checkRecorded(t *testing.T, ctx context.Context, f *fleet.Fleet, sent []fuzzed, tm *terminations) {
	t.Helper()
	rejected := map[uint64]runrecord.Rejection{}
	applied := map[uint64]string{}
	entries, err := f.Runs.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		rec, err := runrecord.Decode(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rec.Rejected {
			rejected[r.Seq] = r
		}
		for _, s := range rec.Applied {
			applied[s] = e.RunID
		}
	}
	tally := map[string]int{}
	// Advisories are core NATS messages: give the last ones a moment.
	natstest.WaitFor(t, 30*time.Second, "every hostile message recorded", func() error {
		clear(tally)
		var missing []string
		for _, s := range sent {
			switch {
			case s.refused != "":
				tally["refused at the edge"]++
			case s.dup:
				tally["dropped as a duplicate id"]++
			default:
				if reason, ok := tm.get(s.seq); ok && reason != "" {
					tally["terminated with a reason"]++
				} else if r, ok := rejected[s.seq]; ok && r.Reason != "" {
					tally["rejected on its run"]++
				} else if _, ok := applied[s.seq]; ok && (s.target != "good" || s.gen == "event") {
					// A run the fuzzer started, or an event no wait of a
					// good run takes (buffered, then dropped).
					tally["applied to a fuzz run, or an unused event"]++
				} else {
					missing = append(missing, fmt.Sprintf("seq %d %s %s (%s)", s.seq, s.gen, s.subject, s.target))
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d messages without a record, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
	// Nothing forged reached a good run's reducer.
	for _, s := range sent {
		if s.target != "good" || s.refused != "" || s.dup || !strings.HasPrefix(s.gen, "result") {
			continue
		}
		if r, ok := rejected[s.seq]; ok {
			// A body that breaks the protocol is refused before its token
			// is looked at; either way no reducer saw it.
			if strings.Contains(r.Reason, "malformed input") {
				tally["of which malformed results refused on good runs"]++
				continue
			}
			if !strings.Contains(r.Reason, step.ReasonForgedToken) {
				t.Errorf("a forged result for %s was refused for %q, not for its token", s.runID, r.Reason)
			}
			tally["of which forged results refused on good runs for their token"]++
			if s.gen != "result" {
				tally["of which carried another run's token or this run's activation"]++
			}
		}
	}
	t.Logf("records: %v", tally)
}

// inputsDrained says whether the dispatchers' consumers of the input
// stream (one per partition, or the shared one) have nothing pending or
// unacknowledged.
func inputsDrained(ctx context.Context, f *fleet.Fleet) error {
	s, err := f.JS.Stream(ctx, f.Names.InputStream())
	if err != nil {
		return err
	}
	var pending uint64
	var unacked, n int
	for info := range s.ListConsumers(ctx).Info() {
		if f.Names.IsDispatcherConsumer(info.Name) {
			n++
			pending += info.NumPending
			unacked += info.NumAckPending
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("no dispatcher consumer yet")
	case pending != 0 || unacked != 0:
		return fmt.Errorf("pending %d, unacknowledged %d", pending, unacked)
	}
	return nil
}
