package security

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/subjects"
	"github.com/jetflow/jetflow/wire"
)

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
