package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/wire"
)

// The tracker that finds a run's progress in its records is client's
// (client/progress_test.go); these tests check how start --wait and the
// demo print it.

func TestPlainView(t *testing.T) {
	var buf bytes.Buffer
	v := &view{w: &buf, prefix: "  r1 ", running: map[string]bool{}}
	v.show([]client.Progress{
		{Kind: client.ProgressState, At: 1000, State: "/states/check"},
		{Kind: client.ProgressInvoke, At: 1000, State: "/states/check", Node: "stock", Name: "stock", Task: "check-stock@1", Attempt: 1},
		{Kind: client.ProgressSettle, At: 1010, Name: "stock", Task: "check-stock@1", Attempt: 1, OK: true, Detail: `{"available":true}`},
		{Kind: client.ProgressSettle, At: 1020, Name: "fraud", Task: "score-fraud@1", Attempt: 1, OK: true},
		{Kind: client.ProgressSettle, At: 1030, Name: "ship", Task: "ship@1", Attempt: 2, Retry: true, Detail: "failed, will retry"},
		{Kind: client.ProgressSettle, At: 1040, Node: "price", Name: "price", Task: "quote-price@1", Attempt: 1, Detail: "node 'price' failed: no such SKU (caught)"},
		{Kind: client.ProgressSettle, At: 1041, Node: "task", Name: "boom", Task: "boom@1", Attempt: 1, Retry: true, Code: "EXIT_64", Detail: "bad input"},
		{Kind: client.ProgressRefused, At: 1045, Name: "event", Seq: 12, Detail: `ignored: event "nope" matched no transition: the run waits in /states/gate for "go"`},
		{Kind: client.ProgressWaiting, At: 1050, State: "/states/await-payment", Detail: "event payment or a timer of 1.5s"},
		{Kind: client.ProgressWaiting, At: 1050, State: "/states/hold"},
		{Kind: client.ProgressState, At: 1060, State: "/states/fulfil/flow/states/sent"},
		{Kind: client.ProgressEnd, At: 1060, Status: &wire.Status{Status: wire.StatusDone, Result: json.RawMessage(`{"notified":true}`)}},
	})
	v.show([]client.Progress{{Kind: client.ProgressEnd, At: 1070, Status: &wire.Status{
		Status: wire.StatusFailed, Error: &wire.RunError{Code: "JF2006", Path: "/nodes/x", Message: "JF2006: node 'x' failed: boom at /nodes/x"},
	}}}) // a second run's end, as far as the view cares
	v.show([]client.Progress{{Kind: client.ProgressEnd, At: 1080, Status: &wire.Status{Status: wire.StatusCancelled}}})
	v.show([]client.Progress{
		{Kind: client.ProgressSettle, At: 1090, State: "/states/go", Node: "task", Name: "boom", Task: "boom@1", Attempt: 3, Code: "BAD_INPUT", Detail: "qty must be positive"},
		{Kind: client.ProgressEnd, At: 1090, Status: &wire.Status{
			Status: wire.StatusFailed, Error: &wire.RunError{Code: "JF2006", Path: "/nodes/task", Message: "JF2006: node 'task' failed: qty must be positive at /nodes/task"},
		}},
	}) // a failure the view saw: the error names the state and the task
	want := []string{
		"  r1 +0.000s state check",
		"  r1 +0.000s task stock check-stock@1 invoked, attempt 1",
		`  r1 +0.010s task stock check-stock@1 ok {"available":true}`,
		"  r1 +0.020s task fraud score-fraud@1 ok",
		"  r1 +0.030s task ship ship@1 attempt 2 failed; will retry",
		"  r1 +0.040s task price quote-price@1 attempt 1 failed: no such SKU (caught)",
		"  r1 +0.041s task boom boom@1 attempt 1 failed (EXIT_64): bad input; will retry",
		`  r1 +0.045s event seq 12 ignored: event "nope" matched no transition: the run waits in /states/gate for "go"`,
		"  r1 +0.050s waiting for event payment or a timer of 1.5s",
		"  r1 +0.050s waiting for none",
		"  r1 +0.060s state fulfil/sent",
		"  r1 done in 0.060s",
		`  r1 result {"notified":true}`,
		"  r1 failed in 0.070s",
		"  r1 error JF2006 /nodes/x node 'x' failed: boom",
		"  r1 cancelled in 0.080s",
		"  r1 +0.090s task boom boom@1 attempt 3 failed (BAD_INPUT): qty must be positive",
		"  r1 failed in 0.090s",
		"  r1 error JF2006 /nodes/task task boom@1 in state go failed (BAD_INPUT): qty must be positive",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPrettyView(t *testing.T) {
	var buf bytes.Buffer
	v := &view{w: &buf, tty: true, running: map[string]bool{}}
	v.show([]client.Progress{{Kind: client.ProgressState, At: 1, State: "/states/fulfil/flow/states/ship"}, {Kind: client.ProgressSettle, At: 2, Name: "ship", OK: true, Detail: "{}"}})
	out := buf.String()
	for _, w := range []string{"→ fulfil/ship", "✓ ship", ansiGreen, clearLine} {
		if !strings.Contains(out, w) {
			t.Errorf("terminal view lacks %q: %q", w, out)
		}
	}
}

func TestStateName(t *testing.T) {
	for id, want := range map[string]string{"/states/a": "a", "/states/f/flow/states/g/flow/states/h": "f/g/h", "": ""} {
		if got := stateName(id); got != want {
			t.Errorf("stateName(%q) = %q, want %q", id, got, want)
		}
	}
}
