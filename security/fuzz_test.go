package security

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
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
	"github.com/jetflow/jetflow/subjects"
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

// fuzzed is one message the fuzzer published and what it aimed at.
type fuzzed struct {
	subject string
	gen     string // the generator that made it
	target  string // "good", "fuzz", "unknown" or "bad-subject"
	runID   string
	seq     uint64
	dup     bool   // dropped by the stream as a duplicate message id
	refused string // refused before it was stored (size), with the error
}

// wireFuzz publishes hostile messages on every input subject.
type wireFuzz struct {
	names subjects.Names
	rnd   *rand.Rand
	good  []string
	runs  []string // fuzz runs started (or about to be)

	mu   sync.Mutex
	invs map[string][]wire.Invocation // spied invocations by run
}

func (w *wireFuzz) spy(m *nats.Msg) {
	var inv wire.Invocation
	if json.Unmarshal(m.Data, &inv) == nil {
		w.mu.Lock()
		w.invs[inv.Run] = append(w.invs[inv.Run], inv)
		w.mu.Unlock()
	}
}

// someInvocation returns a spied invocation of any run but not.
func (w *wireFuzz) someInvocation(not string) (wire.Invocation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var all []wire.Invocation
	for run, invs := range w.invs {
		if run != not {
			all = append(all, invs...)
		}
	}
	if len(all) == 0 {
		return wire.Invocation{}, false
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Token < all[j].Token })
	return all[w.rnd.IntN(len(all))], true
}

func (w *wireFuzz) ownInvocation(run string) (wire.Invocation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if invs := w.invs[run]; len(invs) > 0 {
		return invs[w.rnd.IntN(len(invs))], true
	}
	return wire.Invocation{}, false
}

func (w *wireFuzz) pick(xs []string) string { return xs[w.rnd.IntN(len(xs))] }

// target chooses a run: a good run only for the kinds that must never
// change one (forged results, stale timers, repeated starts, unknown
// events), otherwise a fuzz run or an unknown one.
func (w *wireFuzz) target(goodOK bool) (string, string) {
	switch n := w.rnd.IntN(10); {
	case goodOK && n < 4:
		return "good", w.pick(w.good)
	case n < 8 && len(w.runs) > 0:
		return "fuzz", w.pick(w.runs)
	default:
		return "unknown", fmt.Sprintf("nobody-%d", w.rnd.IntN(1000))
	}
}

// message makes the i-th hostile message.
func (w *wireFuzz) message() (*nats.Msg, fuzzed) {
	var m *nats.Msg
	var f fuzzed
	switch p := w.rnd.IntN(100); {
	case p < 14:
		m, f = w.start()
	case p < 32:
		m, f = w.event()
	case p < 60:
		m, f = w.result()
	case p < 70:
		m, f = w.timer()
	case p < 78:
		m, f = w.cancel()
	default:
		m, f = w.badSubject()
	}
	if w.rnd.IntN(100) < 2 {
		// Oversized: above the dispatcher's limit, rarely above the server's.
		size := fuzzInputLimit + 1 + w.rnd.IntN(fuzzInputLimit)
		if w.rnd.IntN(4) == 0 {
			size = fuzzServerPayload + 1
		}
		m.Data = []byte(`{"pad":"` + strings.Repeat("x", size) + `"}`)
		f.gen += "+oversized"
	}
	if w.rnd.IntN(10) == 0 {
		ids := []string{"start/" + w.pick(w.good), fmt.Sprintf("fuzz-%d", w.rnd.IntN(50)), "result/x/y/1"}
		m.Header.Set(wire.HeaderMsgID, w.pick(ids))
	}
	f.subject = m.Subject
	return m, f
}

func (w *wireFuzz) msg(subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	return m
}

func (w *wireFuzz) start() (*nats.Msg, fuzzed) {
	kind, run := w.target(true)
	if kind != "good" && w.rnd.IntN(2) == 0 {
		kind, run = "fuzz", fmt.Sprintf("fuzz-%d", len(w.runs))
		w.runs = append(w.runs, run)
	}
	body := map[string]any{"workflow": "fuzz", "input": w.randJSON(3)}
	switch w.rnd.IntN(6) {
	case 0:
		body["workflow"] = w.pick([]string{"nope", "", "a.b", "good", strings.Repeat("w", 200), "ünï"})
	case 1:
		body["revision"] = w.pick([]string{"zz", "", "f1"})
	case 2:
		body["workflow"] = w.randJSON(1)
	}
	data := w.mutate(mustJSON(body))
	return w.msg(w.names.Start(run), data), fuzzed{gen: "start", target: kind, runID: run}
}

func (w *wireFuzz) event() (*nats.Msg, fuzzed) {
	kind, run := w.target(true)
	types := []string{"a", "b", "zz", "noise"}
	if kind == "good" {
		types = []string{"noise", "zz", "go2"} // never "go": that one is the good runs' own
	}
	payload := w.randJSON(3)
	if w.rnd.IntN(3) == 0 {
		payload = map[string]any{"n": w.randNumber()}
	}
	return w.msg(w.names.Event(run, w.pick(types)), w.mutate(mustJSON(payload))), fuzzed{gen: "event", target: kind, runID: run}
}

func (w *wireFuzz) result() (*nats.Msg, fuzzed) {
	kind, run := w.target(true)
	res := wire.Result{Activation: w.randString(), Node: w.randString(), Attempt: w.rnd.IntN(4), Token: w.randToken(), Output: mustJSON(w.randJSON(2))}
	gen := "result"
	switch w.rnd.IntN(5) {
	case 0, 1: // another run's genuine invocation and token, sent to this run
		if inv, ok := w.someInvocation(run); ok {
			res.Activation, res.Node, res.Attempt, res.Token = inv.Activation, inv.Node, inv.Attempt, inv.Token
			gen = "result-other-runs-token"
		}
	case 2: // this run's own activation, with a forged or foreign token
		if inv, ok := w.ownInvocation(run); ok {
			res.Activation, res.Node, res.Attempt = inv.Activation, inv.Node, inv.Attempt
			if other, ok := w.someInvocation(run); ok && w.rnd.IntN(2) == 0 {
				res.Token = other.Token
			}
			gen = "result-own-activation-forged-token"
		}
	case 3:
		res.Output, res.Error = nil, &wire.TaskError{Message: w.randString(), Code: w.randString(), NonRetryable: true}
	}
	data := mustJSON(res)
	if w.rnd.IntN(3) == 0 {
		data = w.mutate(data)
	}
	return w.msg(w.names.Result(run), data), fuzzed{gen: gen, target: kind, runID: run}
}

func (w *wireFuzz) timer() (*nats.Msg, fuzzed) {
	kind, run := w.target(true)
	m := w.msg(w.names.Timer(run), w.mutate(mustJSON(wire.Timer{Timer: w.pick([]string{"t1", "t2", "t0", w.randString()}), Deadline: w.randNumber()})))
	if w.rnd.IntN(3) == 0 {
		m.Data = nil
		m.Header.Set(wire.HeaderTimer, w.pick([]string{"t1", "", w.randString()}))
		m.Header.Set(wire.HeaderDeadline, w.pick([]string{"NaN", "1e400", "-1", "x", "1700000000000"}))
	}
	return m, fuzzed{gen: "timer", target: kind, runID: run}
}

func (w *wireFuzz) cancel() (*nats.Msg, fuzzed) {
	kind, run := w.target(false)
	return w.msg(w.names.Cancel(run), w.mutate(mustJSON(wire.Cancel{Reason: w.randString()}))), fuzzed{gen: "cancel", target: kind, runID: run}
}

// badSubject publishes on input subjects no valid input has.
func (w *wireFuzz) badSubject() (*nats.Msg, fuzzed) {
	p := w.names.Prefix() + ".in."
	run := w.pick(append([]string{"nobody", strings.Repeat("r", subjects.MaxToken+1), "ünïcode", "a~b"}, w.good...))
	subject := w.pick([]string{
		p + run + ".event", p + run + ".bogus", p + run + ".event.a.b", p + run + ".result.x",
		p + run + ".start.again", p + run + ".timer.t1", p + run + ".cancel.now", p + run + ".event.ünï",
	})
	return w.msg(subject, w.mutate(mustJSON(w.randJSON(2)))), fuzzed{gen: "bad-subject", target: "bad-subject", runID: run}
}

// mutate returns data unchanged or damaged in one of many ways.
func (w *wireFuzz) mutate(data []byte) []byte {
	switch w.rnd.IntN(16) {
	case 0, 1, 2, 3:
		return data
	case 4: // truncated
		return data[:w.rnd.IntN(len(data)+1)]
	case 5: // a flipped byte
		out := append([]byte(nil), data...)
		if len(out) > 0 {
			out[w.rnd.IntN(len(out))] ^= byte(1 + w.rnd.IntN(255))
		}
		return out
	case 6: // invalid UTF-8 inside and around
		return append(append([]byte{0xff, 0xfe}, data...), 0xc3, 0x28)
	case 7: // deep nesting
		d := 200 + w.rnd.IntN(20000)
		return []byte(`{"input":` + strings.Repeat("[", d) + strings.Repeat("]", d) + `,"workflow":"fuzz"}`)
	case 8: // huge and odd numbers
		return []byte(`{"input":` + w.pick([]string{"1e400", "-1e400", "123456789012345678901234567890", "1e-400", "NaN", "Infinity", "-0", "0x10"}) + `,"attempt":1e309,"deadline":1e309,"workflow":"fuzz"}`)
	case 9: // wrong types for every field
		return []byte(w.pick([]string{`{"workflow":1,"input":2}`, `{"activation":5,"node":[],"attempt":"1","token":{}}`, `{"timer":true,"deadline":"soon"}`, `{"reason":["x"]}`, `[]`, `"str"`, `null`, `42`}))
	case 10: // duplicate keys
		return []byte(`{"workflow":"fuzz","workflow":"good","input":1,"input":2}`)
	case 11: // empty or blank
		return []byte(w.pick([]string{"", " ", "\n\t", "{}"}))
	case 12: // trailing garbage
		return append(append([]byte(nil), data...), []byte(w.pick([]string{"{}", "x", "\x00", "]"}))...)
	case 13: // a byte order mark
		return append([]byte{0xef, 0xbb, 0xbf}, data...)
	case 14: // control characters and NUL
		return []byte("{\"workflow\":\"fu\x00zz\",\"input\":\"\x01\x1f\"}")
	default: // random bytes
		out := make([]byte, w.rnd.IntN(64))
		for i := range out {
			out[i] = byte(w.rnd.IntN(256))
		}
		return out
	}
}

func (w *wireFuzz) randJSON(depth int) any {
	switch n := w.rnd.IntN(8); {
	case n == 0:
		return nil
	case n == 1:
		return w.rnd.IntN(2) == 0
	case n == 2:
		return w.randNumber()
	case n == 3:
		return w.randString()
	case depth <= 0:
		return "leaf"
	case n < 6:
		a := make([]any, w.rnd.IntN(4))
		for i := range a {
			a[i] = w.randJSON(depth - 1)
		}
		return a
	default:
		m := map[string]any{}
		for range w.rnd.IntN(4) {
			m[w.randString()] = w.randJSON(depth - 1)
		}
		return m
	}
}

func (w *wireFuzz) randNumber() float64 {
	return w.pick2([]float64{0, -1, 1, 5, 6, 1e308, -1e308, 4.9e-324, 9007199254740993, 1700000000000, w.rnd.Float64() * 1e6})
}

func (w *wireFuzz) pick2(xs []float64) float64 { return xs[w.rnd.IntN(len(xs))] }

func (w *wireFuzz) randString() string {
	return w.pick([]string{"", "a", "t1", "noise", "\u0000", "\"'\\", "ünï😀", "$.context", strings.Repeat("s", 1000), `["good-0","/states/work",1]`, "jetflow.in.x.start", ">", "*"})
}

func (w *wireFuzz) randToken() string {
	b := make([]byte, w.rnd.IntN(50))
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"[w.rnd.IntN(64)]
	}
	return w.pick([]string{"", "v1." + string(b), string(b), "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
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
	natstest.WaitFor(t, 3*time.Minute, "dispatcher consumer drained", func() error {
		c, err := f.JS.Consumer(ctx, f.Names.InputStream(), f.Names.DispatcherConsumer())
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("pending %d, unacknowledged %d", info.NumPending, info.NumAckPending)
		}
		return nil
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
	t.Logf("%d hostile messages, %d good runs correct, no crash, no stall, in %s", count, goodRuns+1, time.Since(began).Round(time.Millisecond))
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
	if err := wk.Start(testCtx(t, time.Minute)); err != nil {
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
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + f.Names.InputStream() + "." + f.Names.DispatcherConsumer()
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
	rejected := map[uint64]dispatcher.Rejection{}
	applied := map[uint64]string{}
	entries, err := f.Runs.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		rec, err := dispatcher.DecodeRecord(e.Data)
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
			if !strings.Contains(r.Reason, dispatcher.ReasonForgedToken) {
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
