package security

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/engine/fault"
	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/workflow"
)

// TestEvaluationBudget: the engine's limits bound one input, not one
// query. Twenty guards each just under the per-query step limit fail
// once together they spend the input's ten million steps, and a query
// building forty strings of 8 MiB fails once the input has created
// 64 MiB, instead of growing until the process runs out of memory. Both
// runs fail as a run whose one guard is over its limit does: JF2016 at
// the guard that crossed it, citing the JQ2009.
func TestEvaluationBudget(t *testing.T) {
	t.Parallel()
	slow := `{"$some":{"a":{"$range":[1,3000]},"b":{"$range":[1,3000]}},"$satisfies":false}`
	branches := strings.Repeat(`{"guard":`+slow+`,"to":"yes"},`, 20)
	amplified := `{"$workflow":"0.2","revision":"h","initial":"c","states":{"c":{"choose":[` + strings.TrimSuffix(branches, ",") +
		`],"otherwise":"no"},"yes":{"final":true},"no":{"final":true}}}`
	hungry := choose(`{"$gt":[{"$count":{"$for":{"i":{"$range":[1,40]}},"$return":{"$fold":{"acc":"ab"},"$for":{"x":{"$range":[1,22]}},"$return":{"$concat":["$acc","$acc","$i"]}}}},0]}`)
	cases := []struct {
		name, doc, path, says string
	}{
		// The first guard spends 9,006,003 steps; the second crosses.
		{
			"20 guards of 9M steps each", amplified, "/transitions/1/guard",
			"JQ2009: the query exceeded the step budget (10000000 expression evaluations",
		},
		{
			"40 strings of 8 MiB", hungry, "/transitions/0/guard",
			"JQ2009: the query exceeded the byte budget (67108864 bytes",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wf, err := workflow.CompileJSON([]byte(c.doc), workflow.Options{})
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			st, _, err := run.Apply(wf, nil, run.Message{Kind: run.KindStart, RunID: "r", Time: 1}, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("failed after %s", time.Since(began).Round(time.Millisecond))
			f := st.Error
			if st.Status != run.StatusFailed || f == nil || f.Code != string(fault.JF2016) || f.Path != c.path || !strings.Contains(f.Message, c.says) {
				t.Fatalf("the run ended %s with %+v; want JF2016 at %s citing %q", st.Status, f, c.path, c.says)
			}
		})
	}
}

// TestEventsKeptForAWaitBounded: a run keeps the events that arrive while
// a task runs, for the wait that comes next, in its record. An event
// publisher cannot grow that record until the next input no longer fits
// a NATS message: past 256 KiB (or 1000 events) the reducer rejects the
// event with a reason naming the limit, and the record stays well below
// NATS's default 1 MiB.
func TestEventsKeptForAWaitBounded(t *testing.T) {
	t.Parallel()
	wf, err := workflow.CompileJSON([]byte(goodFlow), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := run.Apply(wf, nil, run.Message{Kind: run.KindStart, RunID: "r", Time: 1}, run.Options{})
	if err != nil || st.Status != run.StatusRunning {
		t.Fatalf("start: %s %v", st.Status, err)
	}
	pad := strings.Repeat("p", 100<<10)
	for i := 1; i <= 3; i++ {
		next, _, err := run.Apply(wf, st, run.Message{
			Kind: run.KindEvent, Time: 2,
			Event: &run.Event{Type: "pad", Payload: pad, HasPayload: true},
		}, run.Options{})
		switch {
		case i < 3 && err != nil:
			t.Fatalf("event %d of 100 KiB: %v", i, err)
		case i == 3 && (!errors.Is(err, run.ErrRejected) || !strings.Contains(err.Error(), "(MaxBufferedBytes)")):
			t.Fatalf("event 3 of 100 KiB: %v, want a rejection naming MaxBufferedBytes", err)
		case err == nil:
			st = next
		}
	}
	record, err := run.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(record) > 300<<10 {
		t.Fatalf("the run's state grew to %d bytes", len(record))
	}
}
