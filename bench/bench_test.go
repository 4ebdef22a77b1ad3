package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestShortEverySetup runs every scenario at tiny counts in one process,
// four in separate processes with two dispatchers and one on a 3-node
// cluster, and checks that the report is complete and renders.
func TestShortEverySetup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg := agentConfig(t, Config{
		Short: true,
		Setups: []Setup{
			{Mode: Single},
			{Mode: Processes, Dispatchers: 2, Scenarios: []Scenario{OneTask, Event, Parked, Timers}},
			{Mode: Cluster, Scenarios: []Scenario{OneTask}},
			{Mode: Processes, Scenarios: []Scenario{OneTask}, Durability: Durability{Always: true}},
		},
		Dir:      t.TempDir(),
		Progress: &progress,
	})
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if err := rep.Check(); err != nil {
		t.Fatalf("malformed report: %v", err)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatalf("report after a JSON round trip: %v", err)
	}
	var md strings.Builder
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| single | loop-10 |", "| processes d=2 w=1 | parked (resume) |", "| cluster d=1 w=1 | one-task |",
		"| single | timers (lateness) |", "| processes d=2 w=1 | timers (lateness) |", "| single | 300 |",
		"| processes d=1 w=1 fsync | one-task |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}
