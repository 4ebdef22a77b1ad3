package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchShort runs the bench as CI does: every scenario at tiny counts
// in one process, which fails unless each completed and the report is
// complete. (bench's own test covers the multi-process setups.)
func TestBenchShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report := filepath.Join(dir, "bench.json")
	doc := filepath.Join(dir, "PERFORMANCE.md")
	if err := os.WriteFile(doc, []byte("# Performance\n\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, exit := jetflow(t, "", "bench", "--short", "--quiet", "--modes", "single", "--durability", "default,fsync,50ms", "--dir", dir, "--json", report, "--doc", doc)
	if exit != 0 || !strings.Contains(out, "| target | want | measured | met |") {
		t.Fatalf("bench --short: exit %d:\n%s", exit, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Command string
		Setups  []struct {
			Setup     string
			Scenarios []struct {
				Scenario   string
				RunsPerSec float64 `json:"runs_per_sec"`
			}
		}
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Setups) != 3 || len(rep.Setups[0].Scenarios) != 8 || !strings.Contains(rep.Command, "--short=true") {
		t.Errorf("report: %s", data)
	}
	// Each durability but the default measures one-task on a setup of its own.
	for i, name := range []string{"single fsync", "single sync-interval=50ms"} {
		if s := rep.Setups[min(i+1, len(rep.Setups)-1)]; s.Setup != name || len(s.Scenarios) != 1 || s.Scenarios[0].Scenario != "one-task" {
			t.Errorf("setup %d is %+v, want %s measuring one-task", i+1, s, name)
		}
	}
	if !strings.Contains(out, "| one-task runs/s, every write fsynced, one process | ≥ 2008 (DBOS") || !strings.Contains(out, "| single fsync | one-task |") {
		t.Errorf("bench --short lacks the fsync setup or its target:\n%s", out)
	}
	// A saved report renders again without measuring anything.
	again, exit := jetflow(t, "", "bench", "--from", report)
	if exit != 0 || !strings.Contains(again, "| single | loop-10 |") {
		t.Errorf("bench --from: exit %d:\n%s", exit, again)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(md); strings.Contains(s, "old") || !strings.Contains(s, "Produced by `jetflow bench") || !strings.HasSuffix(s, "<!-- bench:end -->\n\nafter\n") {
		t.Errorf("updated doc:\n%s", s)
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--modes", "cloud"}, `--modes: unknown mode "cloud"`},
		{[]string{"bench", "--scenarios", "nap"}, `--scenarios: unknown scenario "nap"`},
		{[]string{"bench", "--durability", "fsync,sometimes"}, `--durability: durability "sometimes": use default, fsync or a positive fsync interval`},
		{[]string{"bench", "--modes", "processes", "--dispatchers", "0"}, `--dispatchers: "0" is not a positive number`},
		{[]string{"bench-agent", "-role", "nope"}, `-role "nope"`},
	} {
		out, exit := jetflow(t, "", c.args...)
		if exit != 2 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, exit, out, c.want)
		}
	}
}
