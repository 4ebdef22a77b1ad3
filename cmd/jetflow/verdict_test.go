package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/runrecord"
	"github.com/jetflow/jetflow/step"
	"github.com/jetflow/jetflow/wire"
	"github.com/jetflow/jetflow/worker"
)

// TestHistoryAndStatusShowRefusals sends a run a result with a forged
// token from a plain NATS client while its task is in flight, then lets
// a worker send the real one, then an event after the end. history marks
// the forged result and the late event rejected, with their reasons, and
// the real result applied; status lists both refusals.
func TestHistoryAndStatusShowRefusals(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	const id = "refused-1"
	if err := f.Client.StartRun(ctx, "cat", id, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, id, wire.StatusRunning)

	nc, err := nats.Connect(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged, _ := json.Marshal(wire.Result{Activation: "guessed", Node: "task", Attempt: 1, Token: "not-the-token", Output: json.RawMessage(`{"stolen":true}`)})
	if err := nc.Publish(f.Names.Result(id), forged); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitRejections(t, f, id, 1)

	serveCat(t, f)
	waitStatus(t, f, id, wire.StatusDone)
	if err := f.Client.SendEvent(ctx, id, "late", nil); err != nil {
		t.Fatal(err)
	}
	rec := waitRejections(t, f, id, 2)

	out, errOut, exit := verb(t, f, "history", id)
	t.Logf("history:\n%s%s", out, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if exit != 0 || len(lines) != 4 || errOut != "" {
		t.Fatalf("history: exit %d, %q %q", exit, out, errOut)
	}
	for i, want := range []string{
		"start   workflow=cat revision=c1 (the latest at its start) input=7B  | applied",
		`result  node=task attempt=1 ok output={"stolen":true}  | rejected: forged or stale token`,
		`result  state=a task=cat@1 attempt=1 ok output={"cat":{"n":1}}  | applied`,
		`event   type=late payload=null  | rejected: run "refused-1" is done`,
	} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("history line %d = %q, want it to end with %q", i, lines[i], want)
		}
	}

	out, _, exit = verb(t, f, "history", id, "--json")
	var verdicts []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("history --json line %q: %v", l, err)
		}
		verdicts = append(verdicts, m.Verdict+":"+m.Reason)
	}
	if want := `applied:,rejected:forged or stale token,applied:,rejected:run "refused-1" is done`; exit != 0 || strings.Join(verdicts, ",") != want {
		t.Errorf("history --json: exit %d, verdicts %q, want %q", exit, strings.Join(verdicts, ","), want)
	}

	out, _, exit = verb(t, f, "status", id, "--json")
	var st struct {
		Status   string                `json:"status"`
		Rejected []runrecord.Rejection `json:"rejected"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || exit != 0 {
		t.Fatalf("status --json: exit %d, %v: %q", exit, err, out)
	}
	if len(st.Rejected) != 2 || st.Rejected[0] != rec.Rejected[0] || st.Rejected[1] != rec.Rejected[1] ||
		st.Rejected[0].Kind != "result" || !strings.HasSuffix(st.Rejected[0].Reason, step.ReasonForgedToken) ||
		st.Rejected[1].Kind != "event" || st.Rejected[0].Time == 0 {
		t.Errorf("status --json rejected %+v, record %+v", st.Rejected, rec.Rejected)
	}
	out, _, _ = verb(t, f, "status", id)
	t.Logf("status:\n%s", out)
	for _, want := range []string{
		fmt.Sprintf("rejected  seq %d result: forged or stale token\n", rec.Rejected[0].Seq),
		fmt.Sprintf("          seq %d event: run \"refused-1\" is done\n", rec.Rejected[1].Seq),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}

	// An input for a run that was never started.
	if err := f.Client.SendEvent(ctx, "ghost", "go", nil); err != nil {
		t.Fatal(err)
	}
	out, errOut, exit = verb(t, f, "history", "ghost")
	if exit != 0 || !strings.HasSuffix(strings.TrimSpace(out), "event   type=go payload=null  | no-run: terminated by the dispatchers: the input stream holds no start of the run") ||
		!strings.Contains(errOut, "note: ") {
		t.Errorf("history of a run never started: exit %d, %q %q", exit, out, errOut)
	}
}

// TestStatusSaysHowManyMoreRefusals: the text lists the last three
// refusals and counts the others the record keeps.
func TestStatusSaysHowManyMoreRefusals(t *testing.T) {
	t.Parallel()
	f := verbServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), verbBound)
	defer cancel()
	const id = "refused-2"
	if err := f.Client.StartRun(ctx, "gate", id, nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, f, id, wire.StatusDone)
	for i := range 5 {
		if err := f.Client.SendEvent(ctx, id, fmt.Sprintf("late-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	rec := waitRejections(t, f, id, 5)
	out, _, _ := verb(t, f, "status", id)
	t.Logf("status:\n%s", out)
	var shown []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " event: run ") {
			shown = append(shown, l)
		}
	}
	if len(shown) != 3 || !strings.HasPrefix(shown[0], fmt.Sprintf("rejected  seq %d event:", rec.Rejected[2].Seq)) ||
		!strings.Contains(out, "          and 2 earlier in the record") {
		t.Errorf("status:\n%s", out)
	}
}

// waitRejections waits until run id's record lists n rejections and
// returns the record.
func waitRejections(t *testing.T, f *fleet.Fleet, id string, n int) *runrecord.Record {
	t.Helper()
	var rec *runrecord.Record
	natstest.WaitFor(t, verbBound, fmt.Sprintf("%s: %d rejections", id, n), func() error {
		data, _, err := f.Runs.Get(context.Background(), id)
		if err != nil {
			return err
		}
		if rec, err = runrecord.Decode(data); err != nil {
			return err
		}
		if len(rec.Rejected) < n {
			return fmt.Errorf("rejections %+v", rec.Rejected)
		}
		return nil
	})
	return rec
}

// serveCat starts a Go worker for the cat task: it answers {"cat": input}.
func serveCat(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	w, err := worker.New(f.JS, worker.Config{Names: f.Names, PollWait: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Register("cat", "1", func(_ context.Context, inv worker.Invocation) (any, error) {
		var in any
		err := inv.DecodeInput(&in)
		return map[string]any{"cat": in}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
}
