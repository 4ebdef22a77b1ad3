package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jetflow/jetflow/engine/run"
	"github.com/jetflow/jetflow/engine/simtest"
	"github.com/jetflow/jetflow/engine/value"
)

// orderGolden is one case of conformance/golden/order: the text, in the
// reference's member order, of what each handler saw and of the result.
type orderGolden struct {
	Name        string `json:"name"`
	Invocations []struct {
		Task  string `json:"task"`
		With  string `json:"with"`
		Input string `json:"input"`
	} `json:"invocations"`
	Result *string `json:"result"`
}

// orderDifferences are the members where jetflow's text is known to
// differ from the reference's, with why (conformance/README.md, "Member
// order"). A listed member that starts agreeing fails the test, so the
// list cannot go stale.
var orderDifferences = map[string]string{}

// TestMemberOrderMatchesReference checks, byte for byte, the JSON text of
// every task input and with (as value.JSText writes it on the wire) and
// of the run's result against the reference's goldens.
func TestMemberOrderMatchesReference(t *testing.T) {
	t.Parallel()
	dir, err := simtest.Dir()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "cases", "order", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no order cases in %s: %v", dir, err)
	}
	seen := 0
	for _, file := range files {
		var cases []struct {
			Name     string          `json:"name"`
			Scenario json.RawMessage `json:"scenario"`
		}
		var goldens []orderGolden
		readJSONFile(t, file, &cases)
		readJSONFile(t, filepath.Join(dir, "golden", "order", filepath.Base(file)), &goldens)
		if len(cases) != len(goldens) {
			t.Fatalf("%s: %d cases, %d goldens: run node conformance/generate.mjs order", file, len(cases), len(goldens))
		}
		for i, c := range cases {
			g := goldens[i]
			if g.Name != c.Name {
				t.Fatalf("%s: case %q has golden %q: regenerate", file, c.Name, g.Name)
			}
			got := observeOrder(t, c.Scenario)
			if len(got.Invocations) != len(g.Invocations) {
				t.Fatalf("%s: %d invocations, the reference made %d", c.Name, len(got.Invocations), len(g.Invocations))
			}
			check := func(member, want, have string) {
				seen++
				key := c.Name + member
				why, known := orderDifferences[key]
				switch {
				case known && want == have:
					t.Errorf("%s now agrees with the reference (%s): remove it from orderDifferences and the README", key, why)
				case !known && want != have:
					t.Errorf("%s:\n  reference %s\n  jetflow   %s", key, want, have)
				}
			}
			for k, inv := range g.Invocations {
				h := got.Invocations[k]
				p := "/invocations/" + strconv.Itoa(k)
				check(p+"/task", inv.Task, h.Task)
				check(p+"/with", inv.With, h.With)
				check(p+"/input", inv.Input, h.Input)
			}
			check("/result", deref(g.Result), deref(got.Result))
		}
	}
	if seen < 10 {
		t.Fatalf("checked %d members, the corpus should give more", seen)
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// observeOrder runs a scenario and writes what the reference's golden
// records, as jetflow renders it.
func observeOrder(t *testing.T, scenario json.RawMessage) orderGolden {
	t.Helper()
	doc, written, err := value.DecodeWritten(scenario, value.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var out orderGolden
	text := func(v any) string {
		s, err := value.JSText(v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	res, err := runWith(doc, written, runOptions{observe: func(inv *run.Invoke) {
		with := "null"
		if inv.HasWith {
			with = text(inv.With)
		}
		out.Invocations = append(out.Invocations, struct {
			Task  string `json:"task"`
			With  string `json:"with"`
			Input string `json:"input"`
		}{inv.Task, with, text(inv.Input)})
	}})
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := res["calls"].([]any)
	if len(calls) == 0 {
		t.Fatalf("no calls in %v", res)
	}
	last, _ := calls[len(calls)-1].(map[string]any)
	if last["status"] == "done" {
		s := text(last["result"])
		out.Result = &s
	}
	return out
}

func readJSONFile(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
