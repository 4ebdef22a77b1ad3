package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jetflow/jetflow/engine/difftest"
	"github.com/jetflow/jetflow/engine/simtest"
)

// TestDifferential compares `jetflow simulate` with the reference on a
// file of generated scenarios (conformance/differential-simulate.mjs). It
// runs only when JETFLOW_SIM_DIFF names such a file:
//
//	node conformance/differential-simulate.mjs --seed 1 --count 2000 > /tmp/sim.jsonl
//	JETFLOW_SIM_DIFF=/tmp/sim.jsonl go test ./engine/sim -run TestDifferential -v
//
// A scenario agrees when simtest.Diff finds nothing, as for the corpus. It
// prints the counts, then up to JETFLOW_DIFF_SHOW (default 5) examples per
// class, where a class is the shape of the first differing JSON Pointer
// and the error codes involved. With JETFLOW_SIM_STORED=1 every state is
// read back from its encoding before each input, as the fleet reads its
// run record.
func TestDifferential(t *testing.T) {
	stored, inMemory := os.Getenv("JETFLOW_SIM_STORED") == "1", 0
	tally := difftest.New(t, "scenarios")
	for line := range difftest.Lines(t, "JETFLOW_SIM_DIFF", "differential-simulate.mjs") {
		var l struct {
			Name     string          `json:"name"`
			Scenario json.RawMessage `json:"scenario"`
			Output   json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		var inProcess bool
		class, msg := differentialRun(l.Scenario, l.Output, runOptions{stored: stored, inProcess: &inProcess})
		if inProcess {
			inMemory++
		}
		if class == "" {
			tally.Agree("")
			continue
		}
		tally.Disagree("", []string{class}, func() string {
			return fmt.Sprintf("%s\n  scenario %s\n  %s", l.Name, l.Scenario, msg)
		})
	}
	if stored {
		t.Logf("states read back from their encoding; %d scenarios kept in memory once a mock handed back a value that is not JSON", inMemory)
	}
	tally.Report(t)
}

// differentialRun runs one scenario and names its class of disagreement
// ("" when it agrees); a panic or a refusal is a disagreement too.
func differentialRun(scenario, golden []byte, opts runOptions) (class, msg string) {
	type outcome struct{ class, msg string }
	o := difftest.Guard(func() outcome {
		got, err := runJSON(scenario, opts)
		if err != nil {
			return outcome{"go refused", err.Error()}
		}
		m, err := simtest.Diff(golden, []byte(got))
		if err != nil {
			return outcome{"golden unusable", err.Error()}
		}
		if m == nil {
			return outcome{}
		}
		return outcome{diffClass(m, golden, got), m.Error()}
	}, func(r any) outcome { return outcome{"panic", fmt.Sprint(r)} })
	return o.class, o.msg
}

var (
	index  = regexp.MustCompile(`/[0-9]+(/|$)`)
	jfCode = regexp.MustCompile(`JF[0-9]{4}`)
)

// diffClass is the pointer's shape (indices as N, cut after the member
// that differs at the snapshot or result level) with the error codes of
// the golden and of jetflow at the first differing call.
func diffClass(m *simtest.Mismatch, golden []byte, got string) string {
	shape := m.Pointer
	for index.MatchString(shape) {
		shape = index.ReplaceAllString(shape, "/N$1")
	}
	if parts := strings.Split(shape, "/"); len(parts) > 6 {
		shape = strings.Join(parts[:6], "/") + "/…"
	}
	return fmt.Sprintf("%s want=%s got=%s", shape, codeAt(m.Pointer, golden), codeAt(m.Pointer, []byte(got)))
}

// codeAt is the error code of the call (or compile error) the pointer
// names in an output line, "-" when there is none.
func codeAt(pointer string, output []byte) string {
	var out struct {
		Calls        []json.RawMessage `json:"calls"`
		CompileError json.RawMessage   `json:"compileError"`
	}
	if json.Unmarshal(output, &out) != nil {
		return "?"
	}
	entry := out.CompileError
	var i int
	if _, err := fmt.Sscanf(pointer, "/calls/%d", &i); err == nil && i < len(out.Calls) {
		entry = out.Calls[i]
	}
	if c := jfCode.Find(entry); c != nil {
		return string(c)
	}
	return "-"
}

// TestDifferentialClasses checks that a disagreement is found and classed,
// so that TestDifferential cannot pass vacuously.
func TestDifferentialClasses(t *testing.T) {
	t.Parallel()
	const scenario = `{"document":{"$workflow":"0.2","revision":"r","initial":"a","states":{` +
		`"a":{"work":{"task":"t","version":"1"},"then":"b"},"b":{"final":true}}},` +
		`"input":{"n":1},"tasks":{"t":{"version":"1","error":"boom"}},"calls":[{},{"now":5}]}`
	got, err := RunJSON([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		golden string
		class  string
	}{
		{name: "agrees", golden: got},
		{name: "other code", golden: strings.Replace(got, `"code":"JF2006"`, `"code":"JF2015"`, 1), class: "/calls/N/error/code want=JF2015 got=JF2006"},
		{name: "other path", golden: strings.Replace(got, `"path":"/nodes/task"`, `"path":"/nodes/x"`, 1), class: "/calls/N/error/path want=JF2006 got=JF2006"},
		{
			name:   "success expected",
			golden: `{"calls":[{"status":"done","result":null,"snapshot":{}},{"status":"done","result":null,"snapshot":{}}]}`,
			class:  "/calls/N/error want=- got=JF2006",
		},
		{name: "compile error expected", golden: `{"compileError":{"code":"JF0021","path":"","message":"x"}}`, class: "/calls want=JF0021 got=-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			class, msg := differentialRun([]byte(scenario), []byte(tt.golden), runOptions{})
			if class != tt.class {
				t.Fatalf("class %q, want %q (%s)", class, tt.class, msg)
			}
		})
	}
}
