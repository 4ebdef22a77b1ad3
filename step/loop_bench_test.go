package step

import (
	"fmt"
	"testing"

	"github.com/jetflow/jetflow/engine/workflow"
)

// eventLoop waits for event "x" for ever: each event takes the run back
// into the same wait, as a long-lived entity's mailbox does.
const eventLoop = `{
  "$workflow": "0.2",
  "revision": "loop/1",
  "initial": "wait",
  "states": {
    "wait": {"on": [{"event": "x", "to": "wait"}, {"event": "stop", "to": "done"}]},
    "done": {"final": true}
  }
}`

// loopRun is a run of eventLoop and what stepping it needs.
type loopRun struct {
	s    Settings
	defs Definitions
	cur  Run
	seq  uint64
	ev   *Input
}

func newLoopRun(tb testing.TB) *loopRun {
	tb.Helper()
	wf, err := workflow.CompileJSON([]byte(eventLoop), workflow.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	l := &loopRun{s: Settings{Tokens: testSigner}.WithDefaults()}
	l.defs = DefinitionsFunc(func(string, string) (*Definition, error) {
		return &Definition{Name: "loop", Revision: "loop/1", Program: Engine{Workflow: wf}}, nil
	})
	start, err := Parse(l.s, l.s.Names.Start("r"), nil, []byte(`{"workflow":"loop"}`))
	if err != nil {
		tb.Fatal(err)
	}
	if l.ev, err = Parse(l.s, l.s.Names.Event("r", "x"), nil, []byte(`{"n":1}`)); err != nil {
		tb.Fatal(err)
	}
	l.step(tb, start)
	return l
}

// step applies in as the dispatcher does, the record's encoding
// included, and returns the encoded record's size.
func (l *loopRun) step(tb testing.TB, in *Input) int {
	l.seq++
	res, err := Step(l.s, l.cur, in, l.seq, float64(1_000_000+l.seq), l.defs)
	if err != nil || res.Outcome != Applied {
		tb.Fatalf("input %d: %s %v %v", l.seq, res.Outcome, res.Reason, err)
	}
	l.cur = res.Run
	data, err := l.cur.Record.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	return len(data)
}

// TestEventLoopRecordStaysFlat checks that a run's record does not grow
// with the events it has received: from 1,000 events to 10,000 it grows
// only by the digits of its numbers (the sequences of the applied
// inputs it remembers, bounded by AppliedHistory, its generation and
// time), one more each.
func TestEventLoopRecordStaysFlat(t *testing.T) {
	t.Parallel()
	l := newLoopRun(t)
	var at1k int
	for i := 1; i <= 10_000; i++ {
		size := l.step(t, l.ev)
		if i == 1_000 {
			at1k = size
		}
	}
	at10k, _ := l.cur.Record.Encode()
	numbers := len(l.cur.Record.Applied) + 8
	if len(l.cur.Record.Applied) > l.s.AppliedHistory || len(at10k) > at1k+numbers {
		t.Fatalf("the record grew from %d B after 1,000 events to %d B after 10,000 (%d applied sequences kept, AppliedHistory %d):\n%s",
			at1k, len(at10k), len(l.cur.Record.Applied), l.s.AppliedHistory, at10k)
	}
}

// BenchmarkEventLoop measures one step of a run that has already received
// 1,000, 10,000 and 100,000 events: CPU per step (the reducer, the record
// and its encoding, as a dispatcher pays them) and the record's size.
// Run it with a fixed count so that each figure is taken at its size:
//
//	go test ./step -run '^$' -bench EventLoop -benchtime 1000x -benchmem
func BenchmarkEventLoop(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("after=%d", n), func(b *testing.B) {
			l := newLoopRun(b)
			for range n {
				l.step(b, l.ev)
			}
			size := 0
			b.ResetTimer()
			for range b.N {
				size = l.step(b, l.ev)
			}
			b.ReportMetric(float64(size), "record-B")
		})
	}
}
