package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jetflow/jetflow/client"
	"github.com/jetflow/jetflow/fleet"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/wire"
)

// TestPrintFamily: status prints a child's parent, a count of children
// by status, and with --tree one row per child, indented by level.
func TestPrintFamily(t *testing.T) {
	t.Parallel()
	kids := []client.ChildNode{
		{
			Child: wire.Child{Run: "t--task-1-aa", Workflow: "middle", Node: "task", Attempt: 1}, Status: "done",
			Children: []client.ChildNode{{Child: wire.Child{Run: "leaf", Workflow: "one", Node: "task", Attempt: 1}, Status: "done"}},
		},
		{Child: wire.Child{Run: "t--task-2-bb", Workflow: "middle", Node: "task", Attempt: 2, Detached: true}, Status: "running"},
	}
	parent := &wire.Parent{Run: "up", Activation: "a1", Node: "task", Task: "mid", Version: "1", Attempt: 1}
	var buf bytes.Buffer
	printFamily(streams{out: &buf}, parent, kids, false)
	want := "parent    up (node task, mid@1 attempt 1, activation a1)\nchildren  2 (1 done, 1 running)\n"
	if buf.String() != want {
		t.Errorf("without --tree:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	printFamily(streams{out: &buf}, nil, kids, true)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "t--task-1-aa  middle  node task attempt 1  done") ||
		!strings.Contains(lines[2], "  leaf  one") || !strings.Contains(lines[3], "running, detached") {
		t.Errorf("--tree:\n%s", buf.String())
	}
	buf.Reset()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	gone := []client.ChildNode{
		{Child: wire.Child{Run: "k1", Workflow: "one", Node: "task", Attempt: 1}, Status: client.ChildRemoved, RemovedAt: float64(at.UnixMilli())},
		{Child: wire.Child{Run: "k2", Workflow: "one", Node: "task", Attempt: 2}, Status: client.ChildRemoved},
	}
	printFamily(streams{out: &buf}, nil, gone, true)
	if !strings.Contains(buf.String(), "k1  one  node task attempt 1  removed by retention at 2026-01-02T03:04:05.000Z") ||
		!strings.Contains(buf.String(), "k2  one  node task attempt 2  removed by retention\n") {
		t.Errorf("--tree of removed children:\n%s", buf.String())
	}
	if p := parentLink(&wire.Parent{Run: "up", Token: "secret"}); p.Token != "" {
		t.Error("status shows the parent attempt's token")
	}
}

// TestPrintDeploymentChildren: deploy prints a bound task version as a
// child workflow, without a subject or consumer for workers.
func TestPrintDeploymentChildren(t *testing.T) {
	t.Parallel()
	hold := registry.TaskRef{Task: "hold", Version: "1"}
	d := fleet.Deployed{
		Deployment: registry.Deployment{Name: "bound", Document: registry.Document{Revision: "bound/1", Tasks: []registry.TaskRef{hold}}},
		Children:   []fleet.ChildTask{{TaskRef: hold, Workflow: "one"}},
	}
	var buf bytes.Buffer
	if err := printDeployment(streams{out: &buf, err: &buf}, nil, d, nil, false); err != nil {
		t.Fatal(err)
	}
	want := "task hold@1 runs as a child workflow: each invocation starts a run of one (detached (cascade false)); no worker serves it, no consumer\ntasks for workers: none\n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("deploy printed:\n%s\nwant it to end with:\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := printDeployment(streams{out: &buf, err: &buf}, nil, d, nil, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"tasks": []`) || !strings.Contains(buf.String(), `"workflow": "one"`) {
		t.Errorf("deploy --json printed:\n%s\nwant no tasks and hold@1 among the children", buf.String())
	}
}
