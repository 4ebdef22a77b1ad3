package console

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetflow/jetflow/worker"
)

// outcomeDAG runs fine, then boom, which always fails for good.
const outcomeDAG = `{"$dag":"0.1","nodes":{"in":{"kind":"input"},"fine":{"kind":"task","run":"fine","version":"1"},"boom":{"kind":"task","run":"boom","version":"1"},"out":{"kind":"output"}},
 "edges":[{"from":"in","to":"fine"},{"from":"fine","to":"boom"},{"from":"boom","to":"out"}]}`

// failsDoc fails in its work state; catchesDoc catches the same failure
// and ends in its final state rejected, status done.
const (
	failsDoc = `{"$workflow":"0.2","revision":"fails/1","initial":"work","states":{
 "work":{"work":{"dag":` + outcomeDAG + `},"then":"done"},"done":{"final":true}}}`
	catchesDoc = `{"$workflow":"0.2","revision":"catches/1","initial":"work","states":{
 "work":{"work":{"dag":` + outcomeDAG + `},"then":"done","catch":"rejected"},"done":{"final":true},"rejected":{"final":true}}}`
)

// serveOutcomes deploys failsDoc and catchesDoc and serves their tasks.
func (b *bundle) serveOutcomes(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, doc := range map[string]string{"fails": failsDoc, "catches": catchesDoc} {
		if _, err := b.f.Deploy(ctx, name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := worker.New(b.f.JS, worker.Config{Names: b.f.Names, PollWait: 500 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Register("fine", "1", func(context.Context, worker.Invocation) (any, error) { return map[string]any{"ok": hostile}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("boom", "1", func(context.Context, worker.Invocation) (any, error) {
		return nil, worker.NonRetryable(errors.New("the boom service is down " + hostile))
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopCtx(t, w.Stop) })
}

// TestRunOutcomes reads where runs ended from the API, against a real
// deployment: a failed run has nothing in flight and its DAG shows what
// ran; a run done through its catch says so in the list and in its view,
// naming the state, node and task it caught.
func TestRunOutcomes(t *testing.T) {
	b := setup(t, setupOptions{})
	b.serveOutcomes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.f.Client.StartRun(ctx, "fails", "o-failed", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Client.StartRun(ctx, "catches", "o-caught", nil); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, "o-failed", "failed")
	b.waitStatus(t, "o-caught", "done")

	var failed runView
	b.get(t, "/api/runs/o-failed", &failed)
	if failed.Pending != nil {
		t.Errorf("failed run has work in flight: %+v", failed.Pending)
	}
	if failed.DAG == nil {
		t.Fatal("failed run shows no DAG")
	}
	want := map[string]string{"in": "done", "fine": "done", "boom": "failed", "out": ""}
	for _, n := range failed.DAG.Nodes {
		if n.Status != want[n.ID] {
			t.Errorf("failed run: node %s is %q, want %q", n.ID, n.Status, want[n.ID])
		}
	}
	if failed.CaughtError != nil || failed.Caught != "" {
		t.Errorf("failed run marked caught: %+v %q", failed.CaughtError, failed.Caught)
	}

	var caught runView
	b.get(t, "/api/runs/o-caught", &caught)
	c := caught.CaughtError
	if caught.Caught != "JF2006" || c == nil || c.Code != "JF2006" || c.State != "/states/work" || c.Node != "boom" || c.Task != "boom@1" ||
		c.Message != "JF2006: node 'boom' failed: the boom service is down "+hostile+" at /nodes/boom" {
		t.Errorf("caught run: caught %q, error %+v", caught.Caught, c)
	}
	var page Page
	b.get(t, "/api/runs?workflow=catches", &page)
	if len(page.Runs) != 1 || page.Runs[0].Caught != "JF2006" {
		t.Errorf("run list: %+v", page.Runs)
	}
}

// summarizeCases are records and the caught code their summary carries.
var summarizeCases = []struct {
	name, record, caught string
}{
	{"done through a catch", `{"state":{"status":"done","context":{"data":{"error":{"code":"JF2006","message":"m","nodeId":"n"}}}}}`, "JF2006"},
	{"done", `{"state":{"status":"done","context":{"data":{"total":1}}}}`, ""},
	{"a task's output naming an error", `{"state":{"status":"done","context":{"data":{"error":"none","total":1}}}}`, ""},
	{"waiting after a catch", `{"state":{"status":"waiting","context":{"data":{"error":{"code":"JF2006"}}}}}`, ""},
	{"data not an object", `{"state":{"status":"done","context":{"data":["error"]}}}`, ""},
	{"no data", `{"state":{"status":"done"}}`, ""},
}

func TestSummarizeCaught(t *testing.T) {
	t.Parallel()
	for _, c := range summarizeCases {
		s, ok := summarize("r", []byte(c.record), 1, time.Now())
		if !ok || s.Caught != c.caught {
			t.Errorf("%s: %+v %v, want caught %q", c.name, s, ok, c.caught)
		}
	}
}

// FuzzSummarize: any value in the run bucket is summarized or skipped,
// never a panic, and a caught code is only ever a done run's.
func FuzzSummarize(f *testing.F) {
	for _, c := range summarizeCases {
		f.Add([]byte(c.record))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ok := summarize("r", data, 1, time.Now())
		if ok && s.Caught != "" && s.Status != "done" {
			t.Errorf("caught %q on a %s run", s.Caught, s.Status)
		}
	})
}
